"""A classification head over one token of the sequence output (e.g. next-sentence prediction)."""

from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling.layers import dropout as dropout_lib


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class ClassificationHead(tf_keras.layers.Layer):
  """Token `cls_token_idx` -> dense `pooler_dense` (+activation) -> dropout -> dense `logits`.

  Under mixed precision the logits are cast to float32.

  Args:
    inner_dim: width of the pooler (0: no pooler).
    num_classes: output classes.
    cls_token_idx: the classified position.
    activation: the pooler's activation.
    dropout_rate: dropout before the logits.
    initializer: kernel initializer.

  Call args: sequence output [batch, seq, hidden]. Returns float32 logits [batch, num_classes].

  Example:
    >>> head = ClassificationHead(inner_dim=16, num_classes=2, name='next_sentence')
    >>> head(tf.zeros([4, 8, 16])).shape
    TensorShape([4, 2])
  """

  def __init__(self, inner_dim: int, num_classes: int, cls_token_idx: int = 0,
               activation: Optional[str] = 'tanh', dropout_rate: float = 0.0,
               initializer: Any = 'glorot_uniform', **kwargs):
    super().__init__(**kwargs)
    self.inner_dim = inner_dim
    self.num_classes = num_classes
    self.cls_token_idx = cls_token_idx
    self.activation = tf_utils.serialize_activation(activation)
    self.dropout_rate = dropout_rate
    self.initializer = tf_keras.initializers.get(initializer)
    # `dense` and `out_proj` are Model Garden's attribute names (object-checkpoint keys).
    self.dense = None
    if inner_dim:
      self.dense = tf_keras.layers.Dense(
          inner_dim, activation=tf_utils.get_activation(activation),
          kernel_initializer=tf_utils.clone_initializer(self.initializer), name='pooler_dense')
    self.dropout = dropout_lib.Dropout(dropout_rate)
    self.out_proj = tf_keras.layers.Dense(
        num_classes, kernel_initializer=tf_utils.clone_initializer(self.initializer),
        name='logits')

  def call(self, features, training=None):
    x = features[:, self.cls_token_idx, :]
    if self.inner_dim:
      x = self.dense(x)
    x = self.dropout(x, training=training)
    return tf.cast(self.out_proj(x), tf.float32)

  @property
  def pooler_dense(self) -> Optional[tf_keras.layers.Layer]:
    """The `pooler_dense` layer (None when `inner_dim` is 0)."""
    return self.dense

  @property
  def checkpoint_items(self) -> Dict[str, tf_keras.layers.Layer]:
    """`{'pooler_dense': layer}` for partial restore (empty without a pooler)."""
    return {'pooler_dense': self.dense} if self.inner_dim else {}

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(inner_dim=self.inner_dim, num_classes=self.num_classes,
                  cls_token_idx=self.cls_token_idx, activation=self.activation,
                  dropout_rate=self.dropout_rate,
                  initializer=tf_keras.initializers.serialize(self.initializer))
    return config
