"""Dynamic masked-LM masking (RoBERTa style) as a plain TensorFlow function.

`mask_tokens` is the math behind `layers.MaskedLMMaskGenerator` and the on-the-fly masking of
`pretrain_dynamic_dataloader`; it holds no state, so it runs eagerly, in a `tf.function` or in
`tf.data.Dataset.map`, and every call draws new masks for the same token ids.

Semantics per sequence: the selectable positions are those whose id is not in
`unselectable_token_ids` (and, for ragged input, inside the row). The number selected is
`floor(mask_selection_rate * num_selectable + u)` with u ~ U[0, 1) (stochastic rounding, so the
expected count is exactly rate x selectable), capped by `mask_selection_length` and
`num_selectable`; the positions are drawn uniformly without replacement and sorted. Each selected
token independently becomes `mask_token_id` (probability `mask_token_rate`), a uniform random id in
`[0, vocabulary_size)` (`random_token_rate`) or stays.

Outputs (a dict): `token_ids` (masked ids, same type/shape as the input), `mask_positions`,
`mask_ids` (the original ids) in the input's int dtype and `mask_weights` (float32, 1 for real
predictions, 0 for padding), each `[batch, mask_selection_length]`, zero-padded. With
`mask_selection_length=None` the predictions are padded to the sequence length.

Example:
  >>> outputs = mask_tokens(tf.constant([[101, 2023, 2003, 102, 0]]), vocabulary_size=30522,
  ...                       mask_selection_rate=0.15, mask_token_id=103, mask_selection_length=20,
  ...                       unselectable_token_ids=[0, 101, 102])
  >>> outputs['mask_positions'].shape
  TensorShape([1, 20])
"""

from typing import Dict, Optional, Sequence, Union

import tensorflow as tf


def check_masking_args(vocabulary_size: int, mask_selection_rate: float, mask_token_id: int,
                       mask_selection_length: Optional[int] = None, mask_token_rate: float = 0.8,
                       random_token_rate: float = 0.1) -> None:
  """Checks the arguments of `mask_tokens` (see there).

  Raises:
    ValueError: a rate outside [0, 1], `mask_token_id` outside the vocabulary or a
      `mask_selection_length` below 1, naming the argument and the value found.

  Example:
    >>> check_masking_args(vocabulary_size=100, mask_selection_rate=0.15, mask_token_id=4)
  """
  if not 0.0 <= mask_selection_rate <= 1.0:
    raise ValueError(f'mask_selection_rate must be in [0, 1], found {mask_selection_rate}')
  if mask_token_rate < 0 or random_token_rate < 0 or mask_token_rate + random_token_rate > 1.0:
    raise ValueError(f'mask_token_rate + random_token_rate must be in [0, 1] with both >= 0, '
                     f'found {mask_token_rate} + {random_token_rate}')
  if not 0 <= mask_token_id < vocabulary_size:
    raise ValueError(f'mask_token_id must be in [0, vocabulary_size={vocabulary_size}), found '
                     f'{mask_token_id}')
  if mask_selection_length is not None and mask_selection_length < 1:
    raise ValueError(f'mask_selection_length must be None or >= 1, found '
                     f'{mask_selection_length}')


def _uniform(shape: tf.Tensor, seed: Optional[int], salt: int) -> tf.Tensor:
  """U[0, 1) floats; each draw of one call gets its own op seed (`seed + salt`)."""
  return tf.random.uniform(shape, seed=None if seed is None else seed + salt)


def mask_tokens(token_ids: Union[tf.Tensor, tf.RaggedTensor], vocabulary_size: int,
                mask_selection_rate: float, mask_token_id: int,
                mask_selection_length: Optional[int] = None,
                unselectable_token_ids: Sequence[int] = (0,), mask_token_rate: float = 0.8,
                random_token_rate: float = 0.1, seed: Optional[int] = None
                ) -> Dict[str, Union[tf.Tensor, tf.RaggedTensor]]:
  """Selects and replaces tokens for the masked-LM objective (see the module docstring).

  Args:
    token_ids: int ids, `[batch, seq]`, `[seq]` or a ragged `[batch, None]`.
    vocabulary_size: random replacement ids are drawn from `[0, vocabulary_size)`.
    mask_selection_rate: fraction of selectable tokens to predict.
    mask_token_id: id of `[MASK]`.
    mask_selection_length: width of the prediction outputs (None: the sequence length).
    unselectable_token_ids: ids never selected (padding, `[CLS]`, `[SEP]`, ...).
    mask_token_rate: fraction of selected tokens replaced by `[MASK]`.
    random_token_rate: fraction replaced by a random id (the rest keep their id).
    seed: optional seed of the random ops.

  Returns:
    `token_ids` (like the input), `mask_positions`, `mask_ids` and `mask_weights`, each
    `[batch, mask_selection_length]` (`[mask_selection_length]` for a `[seq]` input).

  Raises:
    ValueError: bad arguments (`check_masking_args`).

  Example:
    >>> mask_tokens(tf.constant([[2, 7, 8, 3]]), vocabulary_size=10, mask_selection_rate=0.5,
    ...             mask_token_id=4, mask_selection_length=2,
    ...             unselectable_token_ids=[0, 2, 3])['mask_weights']
    <tf.Tensor: shape=(1, 2), dtype=float32, numpy=array([[1., 0.]], dtype=float32)>
  """
  check_masking_args(vocabulary_size, mask_selection_rate, mask_token_id, mask_selection_length,
                     mask_token_rate, random_token_rate)
  ragged = isinstance(token_ids, tf.RaggedTensor)
  if ragged:
    row_lengths = token_ids.row_lengths()
    token_ids = token_ids.to_tensor(0)
    inside = tf.sequence_mask(row_lengths, tf.shape(token_ids)[1])
  else:
    token_ids = tf.convert_to_tensor(token_ids)
    inside = tf.ones_like(token_ids, tf.bool)
  squeeze = token_ids.shape.rank == 1
  if squeeze:
    token_ids, inside = token_ids[tf.newaxis], inside[tf.newaxis]
  dtype = token_ids.dtype
  shape = tf.shape(token_ids)
  batch, seq = shape[0], shape[1]
  width = mask_selection_length if mask_selection_length is not None else seq

  selectable = inside
  for token in unselectable_token_ids or ():
    selectable &= tf.not_equal(token_ids, tf.cast(int(token), dtype))
  num_selectable = tf.reduce_sum(tf.cast(selectable, tf.int32), axis=1)
  wanted = tf.floor(mask_selection_rate * tf.cast(num_selectable, tf.float32)
                    + _uniform([batch], seed, 1))
  num_selected = tf.minimum(tf.minimum(tf.cast(wanted, tf.int32), num_selectable), width)

  # Random keys; unselectable positions get -1 so top_k never prefers them over selectable ones.
  keys = tf.where(selectable, _uniform(shape, seed, 2), -tf.ones(shape))
  k = tf.minimum(width, seq)
  _, candidates = tf.math.top_k(keys, k=k)  # [batch, k] positions, best keys first
  rank = tf.range(k)[tf.newaxis, :]
  valid = rank < num_selected[:, tf.newaxis]
  # Sort the chosen positions ascending; unused slots sort last.
  positions = tf.sort(tf.where(valid, candidates, seq), axis=1)
  valid = positions < seq
  positions = tf.where(valid, positions, 0)
  pad = [[0, 0], [0, width - k]]
  positions, valid = tf.pad(positions, pad), tf.pad(valid, pad)

  original = tf.gather(token_ids, positions, batch_dims=1)
  draw = _uniform(tf.shape(positions), seed, 3)
  random_ids = tf.random.uniform(tf.shape(positions), 0, vocabulary_size, dtype=tf.int64,
                                 seed=None if seed is None else seed + 4)
  replacement = tf.where(draw < mask_token_rate, tf.cast(mask_token_id, dtype),
                         tf.where(draw < mask_token_rate + random_token_rate,
                                  tf.cast(random_ids, dtype), original))
  # Scatter the replacements (positions are unique within a row).
  hits = tf.one_hot(positions, seq, dtype=tf.int32) * tf.cast(valid, tf.int32)[..., tf.newaxis]
  hit_any = tf.reduce_sum(hits, axis=1) > 0
  scattered = tf.reduce_sum(hits * tf.cast(replacement, tf.int32)[..., tf.newaxis], axis=1)
  masked = tf.where(hit_any, tf.cast(scattered, dtype), token_ids)

  outputs = {
      'token_ids': masked,
      'mask_positions': tf.cast(positions, dtype),
      'mask_ids': tf.where(valid, original, tf.zeros_like(original)),
      'mask_weights': tf.cast(valid, tf.float32),
  }
  if squeeze:
    outputs = {key: value[0] for key, value in outputs.items()}
  if ragged:
    outputs['token_ids'] = tf.RaggedTensor.from_tensor(outputs['token_ids'], lengths=row_lengths)
  return outputs
