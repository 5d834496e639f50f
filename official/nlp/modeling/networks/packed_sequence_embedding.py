"""`PackedSequenceEmbedding`: BERT's embeddings for rows that pack several sequences, with optional
explicit position ids (Model Garden's network, with its layers `PackedSequenceMask` and
`PositionEmbeddingWithSubSeqMask`)."""

from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling import layers


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class PackedSequenceEmbedding(tf_keras.Model):
  """Word + position + type embeddings, LayerNorm, dropout, optional projection; and the mask.

  A functional network with Model Garden's constructor and layer names: `word_embeddings`,
  `position_embedding`, `type_embeddings` (one-hot lookup), `embeddings/layer_norm` (eps 1e-12,
  float32), then `embedding_projection` (no bias) when `embedding_width != hidden_size`.

  Packing: with `pack_multiple_sequences`, a row may hold several sequences, each starting with
  the row's first token (e.g. `[CLS] a b [CLS] c d`); tokens attend only within their own sequence
  and, without `position_ids`, positions restart at 0 in each sequence.

  Args:
    vocab_size: word-embedding rows.
    type_vocab_size: segment ids.
    embedding_width: width of the embeddings (None: hidden_size).
    hidden_size: width of the output.
    max_seq_length: rows of the position table.
    initializer: initializer of the tables and the projection.
    dropout_rate: dropout after the LayerNorm.
    use_position_id: take a fourth input `position_ids` int [batch, seq].
    pack_multiple_sequences: rows hold several sequences (see above).

  Call args:
    inputs: a dict with `input_word_ids`, `input_mask`, `input_type_ids` (and `position_ids`)
      int [batch, seq], or a list in that order.

  Returns:
    `[embeddings, attention_mask]`: [batch, seq, hidden_size] and [batch, seq, seq] (1 where the
    row's token may attend to the column's token), both in the embeddings' dtype.

  Example:
    >>> net = PackedSequenceEmbedding(vocab_size=100, type_vocab_size=2, embedding_width=8,
    ...                               hidden_size=16, max_seq_length=32,
    ...                               initializer='glorot_uniform', dropout_rate=0.1,
    ...                               pack_multiple_sequences=True)
    >>> ids = tf.constant([[1, 5, 6, 1, 7, 0]])
    >>> embeddings, mask = net(dict(input_word_ids=ids, input_mask=tf.ones_like(ids),
    ...                             input_type_ids=tf.zeros_like(ids)))
    >>> embeddings.shape, mask.shape
    (TensorShape([1, 6, 16]), TensorShape([1, 6, 6]))
  """

  def __init__(self, vocab_size: int, type_vocab_size: int, embedding_width: Optional[int],
               hidden_size: int, max_seq_length: int, initializer: Any, dropout_rate: float,
               use_position_id: bool = False, pack_multiple_sequences: bool = False, **kwargs):
    initializer = tf_keras.initializers.get(initializer)
    embedding_width = embedding_width or hidden_size
    clone = lambda: tf_utils.clone_initializer(initializer)

    def int_input(name):
      return tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)

    word_ids, mask, type_ids = (int_input(name) for name in
                                ('input_word_ids', 'input_mask', 'input_type_ids'))
    inputs = [word_ids, mask, type_ids]
    position_ids = None
    if use_position_id:
      position_ids = int_input('position_ids')
      inputs.append(position_ids)
    same_sequence = PackedSequenceMask()(word_ids) if pack_multiple_sequences else None

    # Built in Model Garden's order: the functional layer order is the checkpoint layout.
    word_embedding_layer = layers.OnDeviceEmbedding(
        vocab_size, embedding_width, initializer=clone(), name='word_embeddings')
    word_embeddings = word_embedding_layer(word_ids)
    position_embeddings = PositionEmbeddingWithSubSeqMask(
        initializer=clone(), use_dynamic_slicing=True, max_sequence_length=max_seq_length,
        name='position_embedding')(word_embeddings, position_ids, same_sequence)
    type_embeddings = layers.OnDeviceEmbedding(
        type_vocab_size, embedding_width, initializer=clone(), use_one_hot=True,
        name='type_embeddings')(type_ids)
    embeddings = tf_keras.layers.Add()([word_embeddings, position_embeddings, type_embeddings])
    embeddings = tf_keras.layers.LayerNormalization(
        axis=-1, epsilon=1e-12, dtype=tf.float32, name='embeddings/layer_norm')(embeddings)
    embeddings = tf_keras.layers.Dropout(dropout_rate, dtype=tf.float32)(embeddings)
    if embedding_width != hidden_size:
      embeddings = tf_keras.layers.Dense(hidden_size, use_bias=False, kernel_initializer=clone(),
                                         name='embedding_projection')(embeddings)

    attention_mask = layers.SelfAttentionMask()(embeddings, mask)
    if same_sequence is not None:
      attention_mask = attention_mask * tf.cast(same_sequence, attention_mask.dtype)
    super().__init__(inputs=inputs, outputs=[embeddings, attention_mask], **kwargs)
    # Set without Keras' tracking: the config holds no variables (and adds no checkpoint keys).
    object.__setattr__(self, '_network_config', dict(
        vocab_size=vocab_size, type_vocab_size=type_vocab_size, embedding_width=embedding_width,
        hidden_size=hidden_size, max_seq_length=max_seq_length,
        initializer=tf_keras.initializers.serialize(initializer), dropout_rate=dropout_rate,
        use_position_id=use_position_id, pack_multiple_sequences=pack_multiple_sequences))
    object.__setattr__(self, '_word_embedding_layer', word_embedding_layer)

  def get_embedding_table(self) -> tf.Variable:
    """The word-embedding variable [vocab_size, embedding_width]."""
    return self._word_embedding_layer.embeddings

  def get_config(self) -> Dict[str, Any]:
    return dict(self._network_config)

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    return cls(**config)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class PackedSequenceMask(tf_keras.layers.Layer):
  """Which token pairs of a packed row belong to the same sequence.

  Every sequence of a row starts with the row's first token (its `[CLS]`), which occurs nowhere
  else; the k-th occurrence opens sequence k.

  Call args:
    input_ids: int [batch, seq].

  Returns:
    bool [batch, seq, seq]: True where both tokens are in the same sequence.

  Example:
    >>> PackedSequenceMask()(tf.constant([[1, 5, 1, 6]]))[0, 1].numpy()
    array([ True,  True, False, False])
  """

  def call(self, input_ids):
    starts = tf.cast(tf.equal(input_ids, input_ids[:, :1]), tf.int32)
    sequence_index = tf.cumsum(starts, axis=-1)
    return tf.equal(sequence_index[:, :, None], sequence_index[:, None, :])


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class PositionEmbeddingWithSubSeqMask(tf_keras.layers.Layer):
  """Learned position embeddings, looked up by explicit ids or restarting in each packed sequence.

  Args:
    initializer: the table's initializer.
    use_dynamic_slicing: the table has `max_sequence_length` rows and serves any shorter input
      (else it has the input's static length).
    max_sequence_length: rows of the table; required with `use_dynamic_slicing`, refused without.

  Call args:
    inputs: [batch, seq, width] (the word embeddings; only the shape is used).
    position_ids: optional int [batch, seq] rows to look up.
    sub_sequence_mask: optional bool [batch, seq, seq] (`PackedSequenceMask`): without
      `position_ids`, each position counts from the start of its own sequence.

  Returns:
    [batch, seq, width] float32 (the layer's dtype).

  Example:
    >>> layer = PositionEmbeddingWithSubSeqMask(use_dynamic_slicing=True, max_sequence_length=8)
    >>> layer(tf.zeros([2, 5, 4])).shape
    TensorShape([2, 5, 4])
  """

  def __init__(self, initializer: Any = 'glorot_uniform', use_dynamic_slicing: bool = False,
               max_sequence_length: Optional[int] = None, **kwargs):
    # Keras would take the dtype from the (int) inputs otherwise.
    kwargs.setdefault('dtype', 'float32')
    super().__init__(**kwargs)
    if use_dynamic_slicing and max_sequence_length is None:
      raise ValueError('PositionEmbeddingWithSubSeqMask: use_dynamic_slicing=True needs '
                       'max_sequence_length, found None')
    self._initializer = tf_keras.initializers.get(initializer)
    self._use_dynamic_slicing = use_dynamic_slicing
    self._max_sequence_length = max_sequence_length

  def build(self, input_shape):
    shape = tf.TensorShape(input_shape)
    if shape.rank != 3:
      raise ValueError(f'PositionEmbeddingWithSubSeqMask expects inputs [batch, seq, width], found '
                       f'shape {shape}')
    rows = self._max_sequence_length
    if not self._use_dynamic_slicing:
      if rows is not None:
        raise ValueError('PositionEmbeddingWithSubSeqMask: max_sequence_length must be None '
                         f'without use_dynamic_slicing (the input length sets it), found {rows}')
      rows = shape[1]
      if rows is None:
        raise ValueError('PositionEmbeddingWithSubSeqMask: an input of unknown length needs '
                         'use_dynamic_slicing=True and max_sequence_length')
    # `_position_embeddings` holding variable `embeddings`: Model Garden's checkpoint keys.
    self._position_embeddings = self.add_weight(
        'embeddings', shape=[rows, int(shape[-1])], initializer=self._initializer)
    super().build(input_shape)

  def call(self, inputs, position_ids=None, sub_sequence_mask=None):
    table = self._position_embeddings
    if self._use_dynamic_slicing:
      table = table[:tf.shape(inputs)[1]]
    if position_ids is not None:
      return tf.gather(table, position_ids)
    if sub_sequence_mask is None:
      return tf.broadcast_to(table, tf.shape(inputs))
    # Position of a token in its sequence = tokens of its sequence at or before it, minus one.
    earlier = tf.linalg.band_part(tf.cast(sub_sequence_mask, tf.int32), -1, 0)
    return tf.gather(table, tf.reduce_sum(earlier, axis=-1) - 1)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(initializer=tf_keras.initializers.serialize(self._initializer),
                  use_dynamic_slicing=self._use_dynamic_slicing,
                  max_sequence_length=self._max_sequence_length)
    return config
