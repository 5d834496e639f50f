"""Keras-NLP's `MaskedLMHead`: predictions at masked positions, optionally tied to embeddings."""

from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import bfloat16_sums
from official.modeling import tf_utils
from official.nlp.modeling.layers import reversible_embedding


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class MaskedLMHead(tf_keras.layers.Layer):
  """gather(inputs, mask_positions) -> dense(hidden, intermediate_activation) -> LayerNorm ->
  vocabulary projection (tied `token_embedding` reversed, or its own kernel) + bias -> `activation`.

  Args:
    vocabulary_size: output size.
    token_embedding: an optional `ReversibleEmbedding` to tie the projection to.
    intermediate_activation: activation of the dense transform.
    activation: output activation (None: logits; 'softmax': probabilities).
    layer_norm_epsilon: LayerNorm epsilon.
    kernel_initializer, bias_initializer: initializers.

  Call args: inputs [batch, seq, hidden]; mask_positions int [batch, masks_per_sequence].
  Returns: [batch, masks_per_sequence, vocabulary_size].

  Example:
    >>> embedding = ReversibleEmbedding(100, 16)
    >>> head = MaskedLMHead(vocabulary_size=100, token_embedding=embedding, activation='softmax')
    >>> head(tf.zeros([2, 8, 16]), tf.constant([[1, 2], [3, 4]])).shape
    TensorShape([2, 2, 100])
  """

  def __init__(self, vocabulary_size: int,
               token_embedding: Optional[reversible_embedding.ReversibleEmbedding] = None,
               intermediate_activation: Any = 'relu', activation: Any = None,
               layer_norm_epsilon: float = 1e-05, kernel_initializer: Any = 'glorot_uniform',
               bias_initializer: Any = 'zeros', **kwargs):
    super().__init__(**kwargs)
    if token_embedding is not None and token_embedding.input_dim != vocabulary_size:
      raise ValueError(f'token_embedding.input_dim {token_embedding.input_dim} != '
                       f'vocabulary_size {vocabulary_size}')
    self.vocabulary_size = vocabulary_size
    self.token_embedding = token_embedding
    self.intermediate_activation = tf_utils.serialize_activation(intermediate_activation)
    self.activation = tf_utils.serialize_activation(activation)
    self.layer_norm_epsilon = layer_norm_epsilon
    self.kernel_initializer = tf_keras.initializers.get(kernel_initializer)
    self.bias_initializer = tf_keras.initializers.get(bias_initializer)

  def build(self, inputs_shape, mask_positions_shape=None):
    hidden = (self.token_embedding.output_dim if self.token_embedding is not None
              else int(inputs_shape[-1]))
    self.intermediate_dense = tf_keras.layers.Dense(
        hidden, activation=tf_utils.get_activation(self.intermediate_activation),
        kernel_initializer=tf_utils.clone_initializer(self.kernel_initializer),
        bias_initializer=tf_utils.clone_initializer(self.bias_initializer),
        name='intermediate_dense')
    self.layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=self.layer_norm_epsilon, dtype=tf.float32, name='intermediate_layer_norm')
    if self.token_embedding is None:
      self.output_kernel = self.add_weight(
          'output_kernel', shape=[hidden, self.vocabulary_size],
          initializer=tf_utils.clone_initializer(self.kernel_initializer))
    # Not autocast: the bias is added to the float32 logits at full precision.
    self.output_bias = self.add_weight(
        'output_bias', shape=[self.vocabulary_size],
        initializer=tf_utils.clone_initializer(self.bias_initializer), experimental_autocast=False)
    super().build(inputs_shape)

  def call(self, inputs, mask_positions):
    x = tf.gather(inputs, tf.cast(mask_positions, tf.int32), batch_dims=1)
    x = tf.cast(self.layer_norm(self.intermediate_dense(x)), self.compute_dtype)
    if self.token_embedding is not None:
      logits = self.token_embedding(x, reverse=True)
    else:
      logits = bfloat16_sums.einsum('bph,hv->bpv', x,
                                    tf.cast(self.output_kernel, self.compute_dtype))
    logits = tf.cast(logits, tf.float32) + self.output_bias
    return tf_utils.get_activation(self.activation)(logits) if self.activation else logits

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(
        vocabulary_size=self.vocabulary_size,
        token_embedding=(tf_keras.layers.serialize(self.token_embedding)
                         if self.token_embedding is not None else None),
        intermediate_activation=self.intermediate_activation, activation=self.activation,
        layer_norm_epsilon=self.layer_norm_epsilon,
        kernel_initializer=tf_keras.initializers.serialize(self.kernel_initializer),
        bias_initializer=tf_keras.initializers.serialize(self.bias_initializer))
    return config

  @classmethod
  def from_config(cls, config: Dict[str, Any]):
    config = dict(config)
    if config.get('token_embedding') is not None:
      config['token_embedding'] = tf_keras.layers.deserialize(config['token_embedding'])
    return cls(**config)
