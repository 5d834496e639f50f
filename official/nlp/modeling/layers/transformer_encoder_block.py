"""The BERT transformer block: self-attention and feed-forward, post-LN (BERT) or pre-LN."""

from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import fused_ops
from official.modeling import tf_utils
from official.nlp.modeling.layers import self_attention
from official.nlp.modeling.layers import dropout as dropout_lib

# Activations computed by `fused_ops.gelu` (value: its `approximate`).
_FUSED_GELU = {'gelu': True, 'exact_gelu': False}


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class TransformerEncoderBlock(tf_keras.layers.Layer):
  """One transformer encoder layer.

  Post-LN (`norm_first=False`, original BERT): `x = LN(x + attn(x)); y = LN(x + ffn(x))`.
  Pre-LN (`norm_first=True`): `x = x + attn(LN(x)); y = x + ffn(LN(x))`.
  Sub-layers (variable-name scopes): `self_attention`, `self_attention_layer_norm`, `intermediate`,
  `output`, `output_layer_norm`; held as Model Garden's attributes `_attention_layer`,
  `_attention_layer_norm`, `_intermediate_dense`, `_output_dense`, `_output_layer_norm` (the
  object-checkpoint keys). LayerNorms compute in float32 under mixed precision. The element-wise
  work runs as fused XLA kernels (`official.modeling.fused_ops`): GELU, and in post-LN with a known
  `training` flag dropout + residual add + LayerNorm; the matmuls are 2-D with the bias add fused.

  Args:
    num_attention_heads: attention heads; must divide the hidden size.
    inner_dim: width of the feed-forward layer.
    inner_activation: its activation ('gelu' is the tanh approximation).
    output_dropout: dropout after attention and feed-forward.
    attention_dropout: dropout on attention probabilities.
    norm_first: pre-LN when True.
    norm_epsilon: LayerNorm epsilon.
    kernel_initializer: initializer of every kernel.
    output_range: compute only the first `output_range` positions (the output is shorter).

  Call args:
    inputs: [batch, seq, hidden]; attention_mask: [batch, seq] (1 = token);
    return_attention_scores: also return the attention probabilities [batch, heads, q, seq].

  Returns:
    [batch, output_range or seq, hidden] (and the probabilities when asked).

  Example:
    >>> block = TransformerEncoderBlock(num_attention_heads=2, inner_dim=32, inner_activation='gelu')
    >>> block(tf.zeros([2, 5, 16]), tf.ones([2, 5])).shape
    TensorShape([2, 5, 16])
  """

  def __init__(self, num_attention_heads: int, inner_dim: int, inner_activation: Any = 'gelu',
               output_dropout: float = 0.0, attention_dropout: float = 0.0,
               norm_first: bool = False, norm_epsilon: float = 1e-12,
               kernel_initializer: Any = 'glorot_uniform', output_range: Optional[int] = None,
               **kwargs):
    super().__init__(**kwargs)
    self.num_attention_heads = num_attention_heads
    self.inner_dim = inner_dim
    self.inner_activation = tf_utils.serialize_activation(inner_activation)
    self.output_dropout = output_dropout
    self.attention_dropout = attention_dropout
    self.norm_first = norm_first
    self.norm_epsilon = norm_epsilon
    self.kernel_initializer = tf_keras.initializers.get(kernel_initializer)
    self.output_range = output_range

  def build(self, input_shape):
    hidden = int(input_shape[-1])
    if hidden % self.num_attention_heads:
      raise ValueError(f'hidden size {hidden} is not a multiple of num_attention_heads '
                       f'{self.num_attention_heads}')
    init = lambda: tf_utils.clone_initializer(self.kernel_initializer)
    # Attribute names follow Model Garden's block, so object-checkpoint keys match too.
    self._attention_layer = self_attention.MultiHeadSelfAttention(
        self.num_attention_heads, hidden // self.num_attention_heads, self.attention_dropout,
        kernel_initializer=init(), name='self_attention')
    self._attention_layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=self.norm_epsilon, dtype=tf.float32, name='self_attention_layer_norm')
    # The activation is applied by `_feed_forward` (GELU as a fused kernel).
    self._intermediate_dense = tf_keras.layers.Dense(
        self.inner_dim, kernel_initializer=init(), name='intermediate')
    self._output_dense = tf_keras.layers.Dense(hidden, kernel_initializer=init(), name='output')
    self._output_layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=self.norm_epsilon, dtype=tf.float32, name='output_layer_norm')
    self._attention_dropout = dropout_lib.Dropout(self.output_dropout)
    self._output_dropout = dropout_lib.Dropout(self.output_dropout)
    # Built here, in their own name scopes (variables `.../intermediate/kernel` etc.), because
    # `call` computes with their variables directly.
    sequence_shape = tf.TensorShape([None] * (len(input_shape) - 1) + [hidden])
    for layer, shape in ((self._attention_layer_norm, sequence_shape),
                         (self._intermediate_dense, [None, hidden]),
                         (self._output_dense, [None, self.inner_dim]),
                         (self._output_layer_norm, sequence_shape)):
      with tf.name_scope(layer.name):
        layer.build(tf.TensorShape(shape))
    # The fused kernels take seeds from the dropout layers without calling them: building them
    # creates their random generators now, so a deterministic run's checkpoint includes them.
    for layer in (self._attention_dropout, self._output_dropout):
      layer.build(sequence_shape)
    super().build(input_shape)

  @staticmethod
  def _norm(layer, x):
    # LayerNorm runs in float32 (its dtype policy); the result goes back to the compute dtype.
    return tf.cast(layer(x), x.dtype)

  def _feed_forward(self, x):
    """dense -> activation -> dense on [..., hidden], as 2-D matmuls with the bias add fused."""
    dtype = x.dtype
    rows = tf.reshape(x, [-1, int(x.shape[-1])])
    for layer, activate in ((self._intermediate_dense, True), (self._output_dense, False)):
      rows = tf_utils.bias_add(tf.matmul(rows, tf.cast(layer.kernel, dtype)),
                               tf.cast(layer.bias, dtype))
      if activate:
        rows = self._activation(rows)
    return tf.reshape(rows, tf.shape(x))

  def _activation(self, x):
    if self.inner_activation in _FUSED_GELU:
      return fused_ops.gelu(x, approximate=_FUSED_GELU[self.inner_activation])
    return tf_utils.get_activation(self.inner_activation)(x)

  def _dropout_add_norm(self, residual, branch, dropout, norm, training: bool):
    """norm(residual + dropout(branch)) as one fused kernel (post-LN)."""
    drop = training and self.output_dropout > 0
    seed = dropout.dropout_seed() if drop else None
    return fused_ops.dropout_add_layer_norm(residual, branch, norm.gamma, norm.beta, seed,
                                            self.output_dropout if drop else 0.0, norm.epsilon)

  def call(self, inputs, attention_mask=None, return_attention_scores: bool = False,
           training=None):
    x = inputs
    residual = x if self.output_range is None else x[:, :self.output_range]
    training = dropout_lib.resolve_training(training)
    attention_input = self._norm(self._attention_layer_norm, x) if self.norm_first else x
    attention = self._attention_layer(
        attention_input, attention_mask, query_length=self.output_range,
        return_attention_scores=return_attention_scores, training=training)
    if return_attention_scores:
      attention, scores = attention
    if not self.norm_first and isinstance(training, bool):
      # BERT's post-LN: dropout, residual add and LayerNorm as one fused kernel each way.
      x = self._dropout_add_norm(residual, attention, self._attention_dropout,
                                 self._attention_layer_norm, training)
      output = self._dropout_add_norm(x, self._feed_forward(x), self._output_dropout,
                                      self._output_layer_norm, training)
    else:
      attention = self._attention_dropout(attention, training=training)
      if self.norm_first:
        x = residual + attention
        ffn_input = self._norm(self._output_layer_norm, x)
      else:
        x = self._norm(self._attention_layer_norm, residual + attention)
        ffn_input = x
      ffn = self._output_dropout(self._feed_forward(ffn_input), training=training)
      output = x + ffn if self.norm_first else self._norm(self._output_layer_norm, x + ffn)
    if return_attention_scores:
      return output, scores
    return output

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(num_attention_heads=self.num_attention_heads, inner_dim=self.inner_dim,
                  inner_activation=self.inner_activation, output_dropout=self.output_dropout,
                  attention_dropout=self.attention_dropout, norm_first=self.norm_first,
                  norm_epsilon=self.norm_epsilon, output_range=self.output_range,
                  kernel_initializer=tf_keras.initializers.serialize(self.kernel_initializer))
    return config
