"""Dynamic pretraining inputs: on-the-fly masking, and Model Garden's dynamic sequence lengths.

`BertPretrainDynamicDataConfig` / `BertPretrainDynamicDataLoader` (RoBERTa-style masking): records
hold only token ids; masks are drawn in `tf.data`. Each pass over the data draws new masks for the
same sequences with `masked_lm_masking.mask_tokens` (the op of `layers.MaskedLMMaskGenerator`), so
a corpus written once (`create_pretraining_data.py --dynamic`, dupe_factor 1) gives fresh masks
every epoch. Packed rows (`--dynamic --pack`) need `use_position_id: true`; their `[CLS]`/`[SEP]`
are never selected (unselectable by default, like `[PAD]`).

`BertPretrainBucketedDataConfig` / `PretrainingDynamicDataLoader`: static-mask records batched by
length (Model Garden names the config `BertPretrainDataConfig` in this module: that name is kept as
an alias, see below). Each example's trailing padding is cut, examples are grouped
into the buckets of `seq_bucket_lengths` and each batch is padded to its bucket's length, so short
sequences cost short steps. The masked-LM features of a batch keep their stored length up to the
last position of weight > 0; every example of a batch must have the same number of those (else an
`InvalidArgumentError` "Number of non padded mask tokens ..." at that batch).

Example:
  >>> params = BertPretrainDynamicDataConfig(input_path='data/train.tfrecord', seq_length=128,
  ...                                        max_predictions_per_seq=20, global_batch_size=32)
  >>> batch = next(iter(BertPretrainDynamicDataLoader(params, vocab_size=8000).load()))
  >>> sorted(batch)
  ['input_mask', 'input_type_ids', 'input_word_ids', 'masked_lm_ids', 'masked_lm_positions',
   'masked_lm_weights', 'next_sentence_labels']
"""

import dataclasses
from typing import Any, Dict, List, Optional, Tuple

import tensorflow as tf

from official.modeling import hyperparams
from official.nlp.data import data_loader_factory
from official.nlp.data import data_metadata
from official.nlp.data import pretrain_dataloader
from official.nlp.modeling.ops import masked_lm_masking


@dataclasses.dataclass
class BertPretrainDynamicDataConfig(pretrain_dataloader.BertPretrainDataConfig):
  """Pretraining data masked on the fly.

  Attributes:
    mask_selection_rate: fraction of the selectable tokens predicted (BERT: 0.15).
    mask_token_rate: fraction of the selected tokens replaced by `[MASK]`.
    random_token_rate: fraction replaced by a random token (the rest are kept).
    mask_token_id: id of `[MASK]` (None: taken from the records' metadata file).
    unselectable_token_ids: ids never selected (None: `[PAD]`, `[CLS]`, `[SEP]` from the metadata).
  """
  mask_selection_rate: float = hyperparams.field(0.15, gt=0.0, le=1.0)
  mask_token_rate: float = hyperparams.field(0.8, ge=0.0, le=1.0)
  random_token_rate: float = hyperparams.field(0.1, ge=0.0, le=1.0)
  mask_token_id: Optional[int] = hyperparams.field(None, ge=0)
  unselectable_token_ids: Optional[List[int]] = None


@data_loader_factory.register_data_loader_cls(BertPretrainDynamicDataConfig)
class BertPretrainDynamicDataLoader(pretrain_dataloader.BertPretrainDataLoader):
  """Reads `input_ids`/`input_mask`/`segment_ids` records and masks each batch on the fly.

  Args:
    params: the data config.
    vocab_size: the model's vocabulary size (random replacements are drawn below it); None takes
      it from the records' metadata file.
  """

  stores_masks = False

  def __init__(self, params: BertPretrainDynamicDataConfig, vocab_size: Optional[int] = None):
    super().__init__(params, vocab_size)
    self._masking: Optional[Dict[str, Any]] = None  # `mask_tokens` arguments, on first use

  def _special_ids(self) -> Dict[str, int]:
    return dict((self._metadata or {}).get('special_token_ids') or {})

  def _masking_args(self) -> Dict[str, Any]:
    """The arguments of `mask_tokens` from the config and the records' metadata."""
    params = self._params
    special = self._special_ids()
    mask_token_id = params.mask_token_id
    if mask_token_id is None:
      mask_token_id = special.get('[MASK]')
    if mask_token_id is None:
      raise ValueError('mask_token_id is not set and the records have no metadata file naming '
                       '[MASK]; set task.train_data.mask_token_id (103 for Google BERT '
                       'vocabularies)')
    unselectable = params.unselectable_token_ids
    if unselectable is None:
      unselectable = sorted({0} | {special[t] for t in ('[PAD]', '[CLS]', '[SEP]') if t in special})
    vocab_size = self._vocab_size or (self._metadata or {}).get('vocab_size')
    if vocab_size is None:
      raise ValueError('BertPretrainDynamicDataLoader needs vocab_size (random replacement tokens '
                       'are drawn below it): pass it, or read records with a metadata file')
    return dict(
        vocabulary_size=vocab_size, mask_selection_rate=params.mask_selection_rate,
        mask_token_id=mask_token_id, mask_selection_length=params.max_predictions_per_seq,
        unselectable_token_ids=[int(i) for i in unselectable],
        mask_token_rate=params.mask_token_rate, random_token_rate=params.random_token_rate,
        seed=params.seed)

  def _parse_batch(self, records: tf.Tensor) -> Dict[str, tf.Tensor]:
    features = super()._parse_batch(records)
    if self._masking is None:
      self._masking = self._masking_args()
    masked = masked_lm_masking.mask_tokens(features['input_word_ids'], **self._masking)
    features['input_word_ids'] = masked['token_ids']
    features['masked_lm_positions'] = tf.cast(masked['mask_positions'], tf.int32)
    features['masked_lm_ids'] = tf.cast(masked['mask_ids'], tf.int32)
    features['masked_lm_weights'] = tf.cast(masked['mask_weights'], tf.float32)
    return features


@dataclasses.dataclass
class BertPretrainBucketedDataConfig(pretrain_dataloader.BertPretrainDataConfig):
  """Pretraining records batched by sequence length (Model Garden's dynamic-length config).

  Model Garden calls it `pretrain_dynamic_dataloader.BertPretrainDataConfig`, which that alias
  keeps working; our code uses this name, so that it is never mistaken for the static
  `pretrain_dataloader.BertPretrainDataConfig` it extends.

  Attributes:
    seq_bucket_lengths: the padded lengths of the buckets, ascending; an example goes to the
      shortest bucket that holds it (longer than the last one: an error).
    seq_bucket_window_scale: Model Garden's tf.data-service window factor (kept for YAML
      compatibility; without tf.data service a window is the replicas in sync).
    deterministic: tf.data determinism (default False, as in Model Garden).
  """
  seq_bucket_lengths: Tuple[int, ...] = (128, 256, 384, 512)
  seq_bucket_window_scale: int = hyperparams.field(8, ge=1)
  deterministic: Optional[bool] = False


# Model Garden's name of the config (a second `BertPretrainDataConfig`, next to the static one).
BertPretrainDataConfig = BertPretrainBucketedDataConfig


def _trim_example(example: Dict[str, tf.Tensor], word_ids_name: str, sequence_names: List[str]
                  ) -> Dict[str, tf.Tensor]:
  """Cuts the trailing padding: sequence features to the last non-zero token id, masked-LM
  features to the last position of weight > 0."""
  word_ids = example[word_ids_name]
  nonzero = tf.cast(tf.not_equal(word_ids, 0), tf.int32)
  length = tf.reduce_max(nonzero * tf.range(1, tf.size(word_ids) + 1))
  for name in sequence_names:
    example[name] = example[name][:length]
  weights = example['masked_lm_weights']
  positive = tf.cast(weights > 0, tf.int32)
  num_masks = tf.reduce_max(tf.concat([[0], positive * tf.range(1, tf.size(weights) + 1)], 0))
  for name in _MASK_FEATURES:
    example[name] = example[name][:num_masks]
  example['num_masks'] = num_masks
  return example


_MASK_FEATURES = ('masked_lm_positions', 'masked_lm_ids', 'masked_lm_weights')


@data_loader_factory.register_data_loader_cls(BertPretrainBucketedDataConfig)
class PretrainingDynamicDataLoader:
  """Builds the length-bucketed pipeline of `BertPretrainBucketedDataConfig` (module docstring).

  Args:
    params: the data config.

  Raises:
    ValueError: `seq_bucket_lengths` is empty or not ascending.
  """

  def __init__(self, params: BertPretrainBucketedDataConfig):
    lengths = list(params.seq_bucket_lengths)
    if not lengths or lengths != sorted(set(lengths)) or lengths[0] < 1:
      raise ValueError(f'seq_bucket_lengths must be positive, ascending and not empty; found '
                       f'{lengths}')
    self._params = params
    self._bucket_lengths = lengths

  def _decode(self, record: tf.Tensor) -> Dict[str, tf.Tensor]:
    params = self._params
    names = pretrain_dataloader._feature_names(params)  # pylint: disable=protected-access
    sequence = [names['input_word_ids'], names['input_mask'], names['input_type_ids']]
    if params.use_position_id:
      sequence.append('position_ids')
    spec = {name: tf.io.VarLenFeature(tf.int64) for name in sequence}
    spec.update({'masked_lm_positions': tf.io.VarLenFeature(tf.int64),
                 'masked_lm_ids': tf.io.VarLenFeature(tf.int64),
                 'masked_lm_weights': tf.io.VarLenFeature(tf.float32)})
    if params.use_next_sentence_label:
      spec['next_sentence_labels'] = tf.io.FixedLenFeature([1], tf.int64)
    parsed = tf.io.parse_single_example(record, spec)
    example = {name: tf.sparse.to_dense(value)
               if isinstance(value, tf.sparse.SparseTensor) else value
               for name, value in parsed.items()}
    example = _trim_example(example, names['input_word_ids'], sequence)
    renamed = {model_name: example[record_name] for model_name, record_name in names.items()}
    for extra in ('next_sentence_labels', 'position_ids', 'num_masks'):
      if extra in example:
        renamed[extra] = example[extra]
    return {name: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
            for name, value in renamed.items()}

  def _bucket(self, dataset: tf.data.Dataset, batch_size: int,
              input_context: Optional[tf.distribute.InputContext]) -> tf.data.Dataset:
    """Batches examples of one bucket together, padded to the bucket's length."""
    boundaries = [length + 1 for length in self._bucket_lengths]
    dataset = dataset.bucket_by_sequence_length(
        lambda example: tf.shape(example['input_word_ids'])[0], boundaries,
        [batch_size] * (len(boundaries) + 1), pad_to_bucket_boundary=True,
        drop_remainder=self._params.drop_remainder)
    if input_context and input_context.num_replicas_in_sync > 1:
      # The replicas of one step should get batches of one length: group them by length.
      dataset = dataset.group_by_window(
          key_func=lambda batch: tf.cast(tf.shape(batch['input_word_ids'])[1], tf.int64),
          reduce_func=lambda _, window: window,
          window_size=input_context.num_replicas_in_sync)
    return dataset.map(self._check_masks, num_parallel_calls=tf.data.AUTOTUNE)

  @staticmethod
  def _check_masks(batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    counts = batch.pop('num_masks')
    check = tf.debugging.assert_equal(
        counts, tf.reduce_max(counts),
        message='Number of non padded mask tokens is not the same for each example in the same '
        'sequence length (every example of a batch must have as many masked positions of weight '
        '> 0)')
    with tf.control_dependencies([check]):
      count = tf.reduce_max(counts)
      for name in _MASK_FEATURES:
        batch[name] = tf.identity(batch[name][:, :count])
    return batch

  def load(self, input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Returns batches with `input_word_ids`, `input_mask`, `input_type_ids` (and `position_ids`)
    int32 [batch, bucket length], the masked-LM features [batch, masks] and
    `next_sentence_labels` int32 [batch, 1] when used."""
    params = self._params
    files = pretrain_dataloader.list_input_files(params.input_path)
    pretrain_dataloader.verify_records(files, params)
    pretrain_dataloader.check_packed(data_metadata.load_metadata(files), params)
    dataset, batch_size = pretrain_dataloader.record_stream(params, files, input_context)
    options = tf.data.Options()
    if params.deterministic is not None:
      options.deterministic = params.deterministic
    dataset = dataset.with_options(options)
    dataset = dataset.map(self._decode, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = self._bucket(dataset, batch_size, input_context)
    return dataset.prefetch(params.prefetch_buffer_size or tf.data.AUTOTUNE)
