"""The context-free masked-LM predictor: what held-out masked-LM loss needs no context at all.

A masked position is predicted from the training text's token frequencies alone (a unigram
distribution over the vocabulary), except where the record kept the original token (BERT's
"keep" case: the visible input token equals the label), where the visible token is copied (its
probability 1). A model whose held-out masked-LM loss is not below this predictor's has learnt
nothing from the context. Copying is given the labels' knowledge of which positions kept their
token, so the bar is, if anything, high: a real context-free model cannot tell a kept token from a
random replacement.

The numbers follow the masked-LM task's definitions (`official.nlp.tasks.masked_lm`), on the same
batches as a model's evaluation (the records in file order, batches of `batch_size`, the last one
partial): `lm_example_loss` is the mean over batches of each batch's cross-entropy (nats) averaged
over its masked positions (weighted by `masked_lm_weights`), `masked_lm_accuracy` the fraction of
all masked positions whose most probable token is the label.

Frequencies: every token of the training records with the masked positions restored to their
labels, [PAD], [CLS], [SEP] and [MASK] left out, plus one for every other vocabulary entry (so that
a token never seen in training has a finite loss).

Example:
  >>> counts = token_counts('data/train.tfrecord', vocab_size=16000, excluded_ids=[0, 2, 3, 4])
  >>> probabilities = unigram_probabilities(counts, excluded_ids=[0, 2, 3, 4])
  >>> context_free_metrics(probabilities, masked_lm_batches('data/held_out.tfrecord'))
  {'lm_example_loss': 5.95, 'masked_lm_accuracy': 0.151, 'masked_targets': 30412, ...}
"""

import math
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence

import numpy as np

from official.nlp.data import data_metadata
from official.nlp.data import pretrain_dataloader

# Vocabulary entries that are never a masked-LM label.
SPECIAL_TOKENS = ('[PAD]', '[CLS]', '[SEP]', '[MASK]')


def special_token_ids(vocab_file: str) -> List[int]:
  """Ids of `SPECIAL_TOKENS` in a vocab.txt (one token a line; those absent are skipped).

  Example:
    >>> special_token_ids('vocab/vocab.txt')
    [0, 2, 3, 4]
  """
  with open(vocab_file, encoding='utf-8') as f:
    tokens = [line.rstrip('\n') for line in f]
  return sorted(i for i, token in enumerate(tokens) if token in SPECIAL_TOKENS)


def masked_lm_batches(input_path: str, batch_size: int = 32, seq_length: Optional[int] = None,
                      max_predictions_per_seq: Optional[int] = None
                      ) -> Iterator[Dict[str, np.ndarray]]:
  """The batches a masked-LM evaluation reads, as numpy: records in file order, the last partial.

  Args:
    input_path: pretraining TFRecords (a path, glob or comma-separated list).
    batch_size: records a batch.
    seq_length, max_predictions_per_seq: the records' sizes (default: their metadata file's).

  Yields:
    Dicts with `input_word_ids` int32 [batch, seq], `masked_lm_positions`, `masked_lm_ids`
    int32 and `masked_lm_weights` float32 [batch, predictions].

  Raises:
    ValueError: sizes neither given nor in a metadata file (naming `input_path`).

  Example:
    >>> next(masked_lm_batches('data/held_out.tfrecord'))['masked_lm_ids'].shape
    (32, 20)
  """
  metadata = data_metadata.load_metadata(input_path) or {}
  seq_length = seq_length or metadata.get('max_seq_length')
  max_predictions_per_seq = max_predictions_per_seq or metadata.get('max_predictions_per_seq')
  if not seq_length or not max_predictions_per_seq:
    raise ValueError(f'{input_path}: no metadata file ({data_metadata.metadata_path(input_path)})'
                     ' gives max_seq_length and max_predictions_per_seq; expected them as '
                     f'arguments, found seq_length={seq_length}, '
                     f'max_predictions_per_seq={max_predictions_per_seq}')
  params = pretrain_dataloader.BertPretrainDataConfig(
      input_path=input_path, global_batch_size=batch_size, is_training=False,
      drop_remainder=False, seq_length=seq_length,
      max_predictions_per_seq=max_predictions_per_seq, use_next_sentence_label=False,
      use_position_id=bool(metadata.get('packed')),
      use_v2_feature_names='input_word_ids' in metadata.get('feature_names', ()))
  keys = ('input_word_ids', 'masked_lm_positions', 'masked_lm_ids', 'masked_lm_weights')
  for batch in pretrain_dataloader.BertPretrainDataLoader(params).load():
    yield {key: batch[key].numpy() for key in keys}


def token_counts(input_path: str, vocab_size: int, excluded_ids: Sequence[int] = (),
                 batch_size: int = 256, seq_length: Optional[int] = None,
                 max_predictions_per_seq: Optional[int] = None) -> np.ndarray:
  """How often each token id occurs in pretraining records, masked positions restored.

  Args:
    input_path: pretraining TFRecords.
    vocab_size: length of the returned counts.
    excluded_ids: ids not counted (padding and special tokens).
    batch_size: records read at a time.
    seq_length, max_predictions_per_seq: the records' sizes (default: their metadata file's).

  Returns:
    int64 [vocab_size].

  Raises:
    ValueError: a token id outside the vocabulary (naming the file and the id).

  Example:
    >>> token_counts('data/train.tfrecord', 16000, [0, 2, 3, 4])[:3]
    array([0, 2108, 0])
  """
  counts = np.zeros(vocab_size, np.int64)
  for batch in masked_lm_batches(input_path, batch_size, seq_length, max_predictions_per_seq):
    ids = _restored(batch)
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
      raise ValueError(f'{input_path}: token id {int(ids.max())} outside the vocabulary of '
                       f'{vocab_size}; expected ids in [0, {vocab_size})')
    counts += np.bincount(ids.ravel(), minlength=vocab_size)
  counts[list(excluded_ids)] = 0
  return counts


def _restored(batch: Mapping[str, np.ndarray]) -> np.ndarray:
  """The batch's input ids with each masked position holding its label again."""
  ids = np.array(batch['input_word_ids'], np.int64)
  rows, slots = np.nonzero(batch['masked_lm_weights'] > 0)
  ids[rows, batch['masked_lm_positions'][rows, slots]] = batch['masked_lm_ids'][rows, slots]
  return ids


def unigram_probabilities(counts: np.ndarray, excluded_ids: Sequence[int] = ()) -> np.ndarray:
  """Add-one token frequencies: (count + 1) / total over every id but `excluded_ids` (0 there).

  Example:
    >>> unigram_probabilities(np.array([5, 1, 2]), excluded_ids=[0])
    array([0. , 0.4, 0.6])
  """
  smoothed = np.asarray(counts, np.float64) + 1.0
  smoothed[list(excluded_ids)] = 0.0
  return smoothed / smoothed.sum()


def context_free_metrics(probabilities: np.ndarray, batches: Iterable[Mapping[str, np.ndarray]],
                         copy_kept: bool = True) -> Dict[str, float]:
  """Held-out masked-LM loss and accuracy of the context-free predictor.

  Args:
    probabilities: float [vocab]: the unigram distribution (`unigram_probabilities`).
    batches: evaluation batches (`masked_lm_batches`).
    copy_kept: copy the visible token where it equals the label (False: the unigram alone).

  Returns:
    `lm_example_loss` (mean over batches of each batch's weighted mean cross-entropy, nats),
    `masked_lm_accuracy`, `masked_targets` (weighted positions), `kept` (those whose visible
    token is the label) and `records`.

  Example:
    >>> context_free_metrics(np.array([0.0, 0.5, 0.25, 0.25]), [batch])['masked_lm_accuracy']
    0.5
  """
  log_p = np.log(np.maximum(probabilities, 1e-300))
  top = int(np.argmax(probabilities))
  batch_losses, correct, targets, kept, records = [], 0.0, 0.0, 0.0, 0
  for batch in batches:
    weights = np.asarray(batch['masked_lm_weights'], np.float64)
    labels = np.asarray(batch['masked_lm_ids'])
    visible = np.take_along_axis(np.asarray(batch['input_word_ids']),
                                 np.asarray(batch['masked_lm_positions']), axis=1)
    copied = (visible == labels) if copy_kept else np.zeros(labels.shape, bool)
    losses = np.where(copied, 0.0, -log_p[labels])
    hits = np.where(copied, True, labels == top)
    total = weights.sum()
    batch_losses.append(float((losses * weights).sum() / total) if total > 0 else 0.0)
    correct += float((hits * weights).sum())
    targets += float(total)
    kept += float((copied * weights).sum())
    records += labels.shape[0]
  if not batch_losses:
    raise ValueError('context_free_metrics: no batches; expected held-out records')
  return dict(lm_example_loss=float(np.mean(batch_losses)),
              masked_lm_accuracy=correct / targets if targets else math.nan,
              masked_targets=int(targets), kept=int(kept), records=records)


def context_free_baseline(train_path: str, held_out_paths: Mapping[str, str],
                          vocab_file: Optional[str] = None,
                          batch_size: int = 32) -> Dict[str, Dict[str, float]]:
  """The predictor's figures on each held-out record set, with and without copying.

  Args:
    train_path: the training records whose token frequencies make the unigram.
    held_out_paths: name -> held-out records (e.g. `{'in_domain': ..., 'ood': ...}`).
    vocab_file: the records' vocab.txt (its size and special tokens); None: both from the training
      records' metadata (`vocab_size`, `special_token_ids`), as for a BPE or Unigram tokenizer.
    batch_size: the models' evaluation batch size (the loss is a mean over batches).

  Returns:
    `{name: {'lm_example_loss', 'masked_lm_accuracy', 'masked_targets', 'kept', 'records',
    'unigram_lm_example_loss', 'unigram_masked_lm_accuracy'}}` (`unigram_*`: without copying).

  Example:
    >>> context_free_baseline('train.tfrecord', {'ood': 'ood.tfrecord'}, 'vocab.txt')['ood']
    {'lm_example_loss': 6.3, 'masked_lm_accuracy': 0.14, ...}
  """
  if vocab_file is not None:
    with open(vocab_file, encoding='utf-8') as f:
      vocab_size = sum(1 for _ in f)
    excluded = special_token_ids(vocab_file)
  else:
    metadata = data_metadata.load_metadata(train_path)
    if metadata is None:
      raise ValueError(f'{train_path}: no metadata file, so no vocabulary size; give vocab_file')
    vocab_size = metadata['vocab_size']
    excluded = sorted(i for token, i in metadata['special_token_ids'].items()
                      if token in SPECIAL_TOKENS)
  probabilities = unigram_probabilities(token_counts(train_path, vocab_size, excluded), excluded)
  results = {}
  for name, path in held_out_paths.items():
    batches = list(masked_lm_batches(path, batch_size))
    result = context_free_metrics(probabilities, batches)
    alone = context_free_metrics(probabilities, batches, copy_kept=False)
    result.update(unigram_lm_example_loss=alone['lm_example_loss'],
                  unigram_masked_lm_accuracy=alone['masked_lm_accuracy'])
    results[name] = result
  return results
