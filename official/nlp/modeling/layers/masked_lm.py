"""BERT's masked-LM head: predicts the tokens at masked positions with the tied embedding table."""

from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import fused_ops
from official.modeling import tf_utils
from official.nlp.modeling.layers import fused_layer_norm


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class MaskedLM(tf_keras.layers.Layer):
  """Gathers hidden states at the masked positions and scores them against the vocabulary.

  Computation: gather -> dense (embedding width) + activation -> LayerNorm -> matmul with the
  embedding table transposed -> + bias [vocab]. Logits are float32 under mixed precision.
  The defaults are BERT's (Model Garden's) head: dense and LayerNorm with biases, eps 1e-12;
  `use_bias=False, norm_use_bias=False, norm_epsilon=1e-5` is Hugging Face's ModernBERT head
  (`ModernBertPredictionHead` + decoder).

  Serialization: `get_config` records the table's shape, not the table; `from_config` (or the
  constructor with `embedding_table=None`) creates its own table of that shape, and
  `MaskedLM.from_config(config, embedding_table=table)` ties it to an existing one again.

  Args:
    embedding_table: the word-embedding variable [vocab, embedding_width] to tie to.
    activation: the transform's activation.
    initializer: the transform's kernel initializer.
    output: 'logits' or 'predictions' (log-softmax).
    vocab_size, embedding_width: the table's shape when `embedding_table` is None.
    use_bias: whether the transform's dense layer has a bias.
    norm_use_bias: whether the transform's LayerNorm has a bias (beta).
    norm_epsilon: epsilon of the transform's LayerNorm.

  Call args:
    sequence_data: [batch, seq, hidden]; masked_positions: int [batch, num_predictions].

  Returns:
    [batch, num_predictions, vocab] float32.

  Example:
    >>> table = tf.Variable(tf.random.normal([50, 16]))
    >>> MaskedLM(table, activation='gelu')(tf.zeros([2, 8, 16]), tf.zeros([2, 3], tf.int32)).shape
    TensorShape([2, 3, 50])
  """

  def __init__(self, embedding_table: Optional[tf.Variable] = None, activation: Any = None,
               initializer: Any = 'glorot_uniform', output: str = 'logits',
               name: Optional[str] = None, vocab_size: Optional[int] = None,
               embedding_width: Optional[int] = None, use_bias: bool = True,
               norm_use_bias: bool = True, norm_epsilon: float = 1e-12, **kwargs):
    # No Keras autocast of the whole sequence: `call` casts the gathered rows only.
    super().__init__(name=name, autocast=False, **kwargs)
    if output not in ('logits', 'predictions'):
      raise ValueError(f'Unknown `output` value "{output}": MaskedLM output must be '
                       f"'logits' or 'predictions'")
    if embedding_table is None and not (vocab_size and embedding_width):
      raise ValueError('MaskedLM needs embedding_table, or vocab_size and embedding_width')
    self.embedding_table = embedding_table
    self.vocab_size = int(embedding_table.shape[0]) if embedding_table is not None else vocab_size
    self.embedding_width = (int(embedding_table.shape[1]) if embedding_table is not None
                            else embedding_width)
    self.activation = tf_utils.serialize_activation(activation)
    self.initializer = tf_keras.initializers.get(initializer)
    self.output_type = output
    self.use_bias = bool(use_bias)
    self.norm_use_bias = bool(norm_use_bias)
    self.norm_epsilon = float(norm_epsilon)

  def build(self, input_shape):
    if self.embedding_table is None:
      self.embedding_table = self.add_weight(
          'embedding_table', shape=[self.vocab_size, self.embedding_width],
          initializer=tf_utils.clone_initializer(self.initializer))
    self.dense = tf_keras.layers.Dense(
        self.embedding_width, activation=tf_utils.get_activation(self.activation),
        use_bias=self.use_bias, kernel_initializer=tf_utils.clone_initializer(self.initializer),
        name='transform/dense')
    self.layer_norm = fused_layer_norm.FusedLayerNormalization(
        axis=-1, epsilon=self.norm_epsilon, center=self.norm_use_bias, dtype=tf.float32,
        name='transform/LayerNorm')
    # Not autocast: the bias is added to the float32 logits at full precision.
    self.bias = self.add_weight('output_bias/bias', shape=[self.vocab_size], initializer='zeros',
                                experimental_autocast=False)
    super().build(input_shape)

  def call(self, sequence_data, masked_positions):
    # Gather first: the transform then runs on [batch, num_predictions] rows, not the whole
    # sequence.
    gathered = tf.gather(sequence_data, tf.cast(masked_positions, tf.int32), batch_dims=1)
    gathered = tf.cast(gathered, self.compute_dtype)
    hidden = self.layer_norm(self.dense(gathered))  # float32 LayerNorm
    table = tf.cast(self.embedding_table, self.compute_dtype)
    # One 2-D matmul against the transposed table (no batch matmul, no transposed copy of the
    # table): its gradients are two plain matmuls, the table's without a [batch, width, vocab]
    # intermediate. Faster on CPU than the equivalent einsum.
    rows = tf.reshape(tf.cast(hidden, self.compute_dtype), [-1, self.embedding_width])
    logits = tf.matmul(rows, table, transpose_b=True)
    if logits.dtype == tf.float32:
      logits = tf_utils.bias_add(logits, self.bias)  # fuses with the matmul
    else:  # bfloat16/float16 logits: the cast and the float32 bias in one pass
      logits = fused_ops.cast_bias_add(logits, self.bias)
    leading = [d if d is not None else tf.shape(gathered)[i]
               for i, d in enumerate(gathered.shape[:-1].as_list())]
    # Keeps cast_bias_add's mark: the masked-LM task's loss reads its bfloat16 rows and bias.
    logits = fused_ops.reshape_marked(logits, leading + [self.vocab_size])
    if self.output_type == 'predictions':
      return tf.nn.log_softmax(logits)
    return logits

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(activation=self.activation, output=self.output_type,
                  initializer=tf_keras.initializers.serialize(self.initializer),
                  vocab_size=self.vocab_size, embedding_width=self.embedding_width,
                  use_bias=self.use_bias, norm_use_bias=self.norm_use_bias,
                  norm_epsilon=self.norm_epsilon)
    return config

  @classmethod
  def from_config(cls, config: Dict[str, Any], embedding_table: Optional[tf.Variable] = None):
    return cls(embedding_table=embedding_table, **config)
