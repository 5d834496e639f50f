"""`FactorizedEmbedding`: a narrow embedding table projected to a wider output (ALBERT-style)."""

from typing import Any, Dict, Optional

import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling.layers import einsum_dense
from official.nlp.modeling.layers import on_device_embedding


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class FactorizedEmbedding(on_device_embedding.OnDeviceEmbedding):
  """An `OnDeviceEmbedding` lookup [.., embedding_width] followed by a bias-free projection to
  `output_dim`: vocab x width + width x output_dim parameters instead of vocab x output_dim.

  Sub-layers: the table `embeddings` (as `OnDeviceEmbedding`) and `_embedding_projection`
  (`embedding_projection`, kernel [embedding_width, output_dim], initialized like the table).

  Args:
    vocab_size: rows of the table.
    embedding_width: columns of the table.
    output_dim: width of the output.
    initializer: initializer of the table and of the projection.
    use_one_hot: look up by one-hot matmul.
    scale_factor: multiply the looked-up rows by this before the projection (None: no scaling).

  Call args: ids int [batch, seq]. Returns [batch, seq, output_dim].

  Example:
    >>> FactorizedEmbedding(100, 8, 32)(tf.zeros([2, 5], tf.int32)).shape
    TensorShape([2, 5, 32])
  """

  def __init__(self, vocab_size: int, embedding_width: int, output_dim: int,
               initializer: Any = 'glorot_uniform', use_one_hot: bool = False,
               scale_factor: Optional[float] = None, **kwargs):
    super().__init__(vocab_size=vocab_size, embedding_width=embedding_width,
                     initializer=initializer, use_one_hot=use_one_hot, scale_factor=scale_factor,
                     **kwargs)
    if output_dim < 1:
      raise ValueError(f'FactorizedEmbedding output_dim must be >= 1, found {output_dim}')
    self.output_dim = output_dim

  def build(self, input_shape):
    self._embedding_projection = einsum_dense.Float32SumEinsumDense(
        '...x,xy->...y', output_shape=self.output_dim, bias_axes=None,
        kernel_initializer=tf_utils.clone_initializer(self.initializer),
        name='embedding_projection')
    super().build(input_shape)

  def call(self, inputs):
    return self._embedding_projection(super().call(inputs))

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(output_dim=self.output_dim)
    return config
