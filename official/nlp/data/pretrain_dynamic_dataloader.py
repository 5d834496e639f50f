"""Dynamic (RoBERTa-style) masking: records hold only token ids; masks are drawn in `tf.data`.

Each pass over the data draws new masks for the same sequences with `MaskedLMMaskGenerator`, so a corpus
written once (`create_pretraining_data.py --dynamic`, dupe_factor 1) gives fresh masks every epoch.

Example:
  >>> params = BertPretrainDynamicDataConfig(input_path='data/train.tfrecord', seq_length=128,
  ...                                        max_predictions_per_seq=20, global_batch_size=32)
  >>> batch = next(iter(BertPretrainDynamicDataLoader(params, vocab_size=8000).load()))
  >>> sorted(batch)
  ['input_mask', 'input_type_ids', 'input_word_ids', 'masked_lm_ids', 'masked_lm_positions',
   'masked_lm_weights', 'next_sentence_labels']
"""

import dataclasses
from typing import Dict, List, Optional

import tensorflow as tf

from official.modeling import hyperparams
from official.nlp.data import pretrain_dataloader
from official.nlp.modeling.layers import masked_lm_mask_generator


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


class BertPretrainDynamicDataLoader(pretrain_dataloader.BertPretrainDataLoader):
  """Reads `input_ids`/`input_mask`/`segment_ids` records and masks each batch on the fly.

  Args:
    params: the data config.
    vocab_size: the model's vocabulary size (random replacements are drawn below it).
  """

  stores_masks = False

  def __init__(self, params: BertPretrainDynamicDataConfig, vocab_size: int):
    super().__init__(params, vocab_size)
    self._generator: Optional[masked_lm_mask_generator.MaskedLMMaskGenerator] = None

  def _special_ids(self) -> Dict[str, int]:
    return dict((self._metadata or {}).get('special_token_ids') or {})

  def _build_generator(self) -> masked_lm_mask_generator.MaskedLMMaskGenerator:
    params = self._params
    special = self._special_ids()
    mask_token_id = params.mask_token_id
    if mask_token_id is None:
      mask_token_id = special.get('[MASK]')
    if mask_token_id is None:
      raise ValueError('mask_token_id is not set and the records have no metadata file naming '
                       '[MASK]; set task.train_data.mask_token_id (103 for Google BERT vocabularies)')
    unselectable = params.unselectable_token_ids
    if unselectable is None:
      unselectable = sorted({0} | {special[t] for t in ('[PAD]', '[CLS]', '[SEP]') if t in special})
    return masked_lm_mask_generator.MaskedLMMaskGenerator(
        vocabulary_size=self._vocab_size, mask_selection_rate=params.mask_selection_rate,
        mask_token_id=mask_token_id, mask_selection_length=params.max_predictions_per_seq,
        unselectable_token_ids=unselectable, mask_token_rate=params.mask_token_rate,
        random_token_rate=params.random_token_rate, seed=params.seed)

  def _parse_batch(self, records: tf.Tensor) -> Dict[str, tf.Tensor]:
    features = super()._parse_batch(records)
    if self._generator is None:
      self._generator = self._build_generator()
    masked = self._generator(features['input_word_ids'])
    features['input_word_ids'] = masked['token_ids']
    features['masked_lm_positions'] = tf.cast(masked['mask_positions'], tf.int32)
    features['masked_lm_ids'] = tf.cast(masked['mask_ids'], tf.int32)
    features['masked_lm_weights'] = tf.cast(masked['mask_weights'], tf.float32)
    return features
