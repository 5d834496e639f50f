"""Small models for trainer and utility tests (Model Garden's `official.core.test_utils` names).

Example:
  >>> model = FakeKerasModel()
  >>> model(np.zeros([2, 3]))   # variables fake_keras_model/dense/kernel [3, 4], ...
"""

import tensorflow as tf
import tf_keras


class FakeKerasModel(tf_keras.Model):
  """Two ReLU dense layers of width 4 (a Keras model)."""

  def __init__(self):
    super().__init__()
    self.dense = tf_keras.layers.Dense(4, activation=tf.nn.relu)
    self.dense2 = tf_keras.layers.Dense(4, activation=tf.nn.relu)

  def call(self, inputs):  # pylint: disable=arguments-differ
    return self.dense2(self.dense(inputs))


class _Dense(tf.Module):
  """relu(x @ w + b) as a plain `tf.Module`, variables `w` [input_dim, output_size] and `b`."""

  def __init__(self, input_dim: int, output_size: int, name: str = None):
    super().__init__(name=name)
    with self.name_scope:
      self.w = tf.Variable(tf.random.normal([input_dim, output_size]), name='w')
      self.b = tf.Variable(tf.zeros([output_size]), name='b')

  @tf.Module.with_name_scope
  def __call__(self, x):
    return tf.nn.relu(tf.matmul(x, self.w) + self.b)


class FakeModule(tf.Module):
  """Two `_Dense` modules of width 4 (`dense`, `dense_1`): a model that is not Keras."""

  def __init__(self, input_size: int, name: str = None):
    super().__init__(name=name)
    with self.name_scope:
      self.dense = _Dense(input_size, 4, name='dense')
      self.dense2 = _Dense(4, 4, name='dense_1')

  @tf.Module.with_name_scope
  def __call__(self, x):
    return self.dense2(self.dense(x))
