"""Model Garden's string-token API of pretraining data: instances as lists of string tokens, in
memory (`TrainingInstance`, `create_masked_lm_predictions`, `create_instances_from_document`,
`create_training_instances`, `write_instance_to_example_files`), for small data and tests.

They keep Model Garden's arguments and are importable from `create_pretraining_data` too; they
share packing and masking with the fast pipeline (`pretraining_instances`), so the records of
`write_instance_to_example_files` have the same schema and semantics as `create_pretraining_data`'s.

Example:
  >>> rng = random.Random(12345)
  >>> instances = create_training_instances(['corpus.txt'], tokenizer, None, 128, 1, 0.1, 0.15,
  ...                                       20, rng)
  >>> write_instance_to_example_files(instances, tokenizer, 128, 20, ['out/train.tfrecord'])
"""

import dataclasses
import random
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from official.nlp.data import pretraining_instances as pi
from official.nlp.data import tfrecord_writer
from official.nlp.data import tokenized_corpus
from official.nlp.data.tokenization import (CLS_TOKEN, CONTINUATION_PREFIX, MASK_TOKEN, SEP_TOKEN,
                                            WordPieceTokenizer)

__all__ = [
    'TrainingInstance', 'create_masked_lm_predictions', 'create_instances_from_document',
    'create_training_instances', 'write_instance_to_example_files'
]


@dataclasses.dataclass
class TrainingInstance:
  """One pretraining example as string tokens (Model Garden's `TrainingInstance`)."""
  tokens: List[str]
  segment_ids: List[int]
  masked_lm_positions: List[int]
  masked_lm_labels: List[str]
  is_random_next: bool


def create_masked_lm_predictions(
    tokens: Sequence[str], masked_lm_prob: float, max_predictions_per_seq: int,
    vocab_words: Sequence[str], rng: random.Random, do_whole_word_mask: bool = False,
    max_ngram_size: Optional[int] = None) -> Tuple[List[str], List[int], List[str]]:
  """Masks tokens for the masked-LM objective (Google BERT semantics, see `pretraining_instances`).

  Args:
    tokens: `[CLS] A [SEP] (B [SEP])` string tokens.
    masked_lm_prob: fraction of tokens to mask (budget `round(len(tokens) * masked_lm_prob)`, at
      least 1).
    max_predictions_per_seq: cap on the budget.
    vocab_words: the vocabulary (random replacements are drawn from it).
    rng: random source.
    do_whole_word_mask: mask a word with all its `##` pieces, one [MASK]/random/keep decision per
      word.
    max_ngram_size: mask spans of up to n words/tokens (p ~ 1/n).

  Returns:
    `(output_tokens, masked_lm_positions, masked_lm_labels)`, positions sorted.

  Example:
    create_masked_lm_predictions(["[CLS]", "a", "b", "[SEP]"], 0.15, 20, vocab, random.Random(0))
  """
  candidates = np.array([[t not in (CLS_TOKEN, SEP_TOKEN) for t in tokens]], bool)
  continuation = (np.array([[t.startswith(CONTINUATION_PREFIX) for t in tokens]], bool)
                  if do_whole_word_mask else None)
  budget = pi.num_predictions([len(tokens)], masked_lm_prob, max_predictions_per_seq)
  selection = pi.select_masked_positions(
      candidates, pi.unit_starts_for(candidates, continuation), budget, max_predictions_per_seq,
      len(vocab_words), np.random.default_rng(rng.getrandbits(64)), max_ngram_size)
  output = list(tokens)
  positions, labels = [], []
  for slot in range(int(selection.counts[0])):
    position = int(selection.positions[0, slot])
    positions.append(position)
    labels.append(tokens[position])
    action = selection.actions[0, slot]
    if action == pi.ACTION_MASK:
      output[position] = MASK_TOKEN
    elif action == pi.ACTION_RANDOM:
      output[position] = vocab_words[int(selection.random_ids[0, slot])]
  return output, positions, labels


def _window(items: Sequence[Any], size: int) -> Iterator[List[Any]]:
  """Every run of `size` consecutive items, in order (none when `size > len(items)`).

  Example:
    list(_window([1, 2, 3], 2)) == [[1, 2], [2, 3]]
  """
  items = list(items)
  for start in range(len(items) - size + 1):
    yield items[start:start + size]


def _tokens_to_grams(tokens: Sequence[str]) -> List[Tuple[int, int]]:
  """The `[start, end)` spans of whole words (a token and its `##` pieces), [CLS]/[SEP] excluded.

  The same grouping as `pretraining_instances.unit_starts_for` on string tokens (the unit of
  whole-word and n-gram masking).

  Example:
    _tokens_to_grams(["[CLS]", "Up", "##dog", "[SEP]"]) == [(1, 3)]
  """
  candidates = np.array([[t not in (CLS_TOKEN, SEP_TOKEN) for t in tokens]], bool)
  continuation = np.array([[t.startswith(CONTINUATION_PREFIX) for t in tokens]], bool)
  starts = np.flatnonzero(pi.unit_starts_for(candidates, continuation)[0]).tolist()
  spans = []
  for start in starts:
    end = start + 1
    while end < len(tokens) and candidates[0, end] and continuation[0, end]:
      end += 1
    spans.append((start, end))
  return spans


def _csr(all_documents: Sequence[Sequence[Sequence[str]]]):
  """Sentence and document offsets of string-token documents (corpus token coordinates)."""
  sentence_lengths = [len(sentence) for document in all_documents for sentence in document]
  sentence_starts = np.concatenate([[0], np.cumsum(sentence_lengths,
                                                   dtype=np.int64)]).astype(np.int64)
  document_starts = np.concatenate([[0],
                                    np.cumsum([len(d) for d in all_documents], dtype=np.int64)])
  return sentence_starts, document_starts.astype(np.int64)


def _instances_from_packed(all_documents, packed: pi.PackedInstances, sentence_starts,
                           document_starts, masked_lm_prob, max_predictions_per_seq, vocab_words,
                           rng, do_whole_word_mask, max_ngram_size,
                           no_next_sentence) -> List[TrainingInstance]:
  flat_cache: Dict[int, List[str]] = {}

  def tokens(document: int, start: int, end: int) -> List[str]:
    if document not in flat_cache:
      flat_cache[document] = [t for sentence in all_documents[document] for t in sentence]
    offset = int(sentence_starts[document_starts[document]])
    return flat_cache[document][start - offset:end - offset]

  instances = []
  for i in range(len(packed)):
    tokens_a = tokens(int(packed.document[i]), int(packed.a_start[i]), int(packed.a_end[i]))
    sequence = [CLS_TOKEN] + tokens_a + [SEP_TOKEN]
    segment_ids = [0] * len(sequence)
    if not no_next_sentence:
      tokens_b = tokens(int(packed.b_document[i]), int(packed.b_start[i]), int(packed.b_end[i]))
      sequence += tokens_b + [SEP_TOKEN]
      segment_ids += [1] * (len(tokens_b) + 1)
    sequence, positions, labels = create_masked_lm_predictions(sequence, masked_lm_prob,
                                                               max_predictions_per_seq, vocab_words,
                                                               rng, do_whole_word_mask,
                                                               max_ngram_size)
    instances.append(
        TrainingInstance(sequence, segment_ids, positions, labels, bool(packed.is_random_next[i])))
  return instances


def create_instances_from_document(all_documents: Sequence[Sequence[Sequence[str]]],
                                   document_index: int, max_seq_length: int, short_seq_prob: float,
                                   masked_lm_prob: float, max_predictions_per_seq: int,
                                   vocab_words: Sequence[str], rng: random.Random,
                                   do_whole_word_mask: bool = False,
                                   max_ngram_size: Optional[int] = None,
                                   no_next_sentence: bool = False,
                                   sentence_order: bool = False) -> List[TrainingInstance]:
  """Instances of one document (Google BERT packing, see `pretraining_instances.pack_documents`).

  Args:
    all_documents: documents as lists of sentences as lists of string tokens (random next segments
      come from other documents); documents must not be empty.
    document_index: the document to cut.
    max_seq_length, short_seq_prob, masked_lm_prob, max_predictions_per_seq, vocab_words, rng,
      do_whole_word_mask, max_ngram_size: as in `create_masked_lm_predictions` /
        `create_pretraining_data`.
    no_next_sentence: single segments `[CLS] tokens [SEP]` (RoBERTa style), `is_random_next` False.
    sentence_order: consecutive segments of the document, `is_random_next` True where they are
      swapped (ALBERT's sentence-order prediction).

  Returns:
    The `TrainingInstance`s.
  """
  sentence_starts, document_starts = _csr(all_documents)
  packed = pi.pack_documents(np.array([document_index]), sentence_starts, document_starts,
                             max_seq_length, short_seq_prob,
                             np.random.default_rng(rng.getrandbits(64)),
                             next_sentence=not no_next_sentence, sentence_order=sentence_order)
  return _instances_from_packed(all_documents, packed, sentence_starts, document_starts,
                                masked_lm_prob, max_predictions_per_seq, vocab_words, rng,
                                do_whole_word_mask, max_ngram_size, no_next_sentence)


def create_training_instances(input_files: Sequence[str], tokenizer: WordPieceTokenizer,
                              processor_text_fn: Optional[Callable[[str], str]],
                              max_seq_length: int, dupe_factor: int, short_seq_prob: float,
                              masked_lm_prob: float, max_predictions_per_seq: int,
                              rng: random.Random, do_whole_word_mask: bool = False,
                              max_ngram_size: Optional[int] = None,
                              no_next_sentence: bool = False,
                              sentence_order: bool = False) -> List[TrainingInstance]:
  """All instances of the input files, in memory, shuffled (Model Garden's function; small data).

  Args:
    input_files: text files (one sentence a line, blank line between documents).
    tokenizer: a `WordPieceTokenizer`.
    processor_text_fn: optional function applied to each line before tokenizing.
    dupe_factor: how many times each document is cut (with different random choices).
    Others: see `create_instances_from_document`.

  Returns:
    The shuffled `TrainingInstance`s.
  """
  corpus, _ = tokenized_corpus.read_tokenized_corpus(list(input_files), tokenizer,
                                                     processor_text_fn)
  vocab = tokenizer.vocab
  tokens = [vocab[i] for i in corpus.token_ids.tolist()]
  starts = corpus.sentence_starts.tolist()
  all_documents = []
  for d in range(corpus.num_documents):
    first, last = int(corpus.document_starts[d]), int(corpus.document_starts[d + 1])
    all_documents.append([tokens[starts[s]:starts[s + 1]] for s in range(first, last)])
  rng.shuffle(all_documents)
  sentence_starts, document_starts = _csr(all_documents)
  instances = []
  for _ in range(dupe_factor):
    packed = pi.pack_documents(np.arange(len(all_documents)), sentence_starts, document_starts,
                               max_seq_length, short_seq_prob,
                               np.random.default_rng(rng.getrandbits(64)),
                               next_sentence=not no_next_sentence, sentence_order=sentence_order)
    instances.extend(
        _instances_from_packed(all_documents, packed, sentence_starts, document_starts,
                               masked_lm_prob, max_predictions_per_seq, vocab, rng,
                               do_whole_word_mask, max_ngram_size, no_next_sentence))
  rng.shuffle(instances)
  return instances


def write_instance_to_example_files(instances: Sequence[TrainingInstance],
                                    tokenizer: WordPieceTokenizer, max_seq_length: int,
                                    max_predictions_per_seq: int, output_files: Sequence[str],
                                    gzip_compress: bool = False,
                                    use_v2_feature_names: bool = False) -> int:
  """Writes instances round-robin to `output_files` as Google BERT TFRecords; returns the count."""
  count = len(instances)
  batch = pi.InstanceBatch(
      input_ids=np.zeros((count, max_seq_length), np.int64),
      input_mask=np.zeros((count, max_seq_length), np.int64),
      segment_ids=np.zeros((count, max_seq_length), np.int64),
      next_sentence_labels=np.array([int(i.is_random_next) for i in instances], np.int64),
      masked_lm_positions=np.zeros((count, max_predictions_per_seq), np.int64),
      masked_lm_ids=np.zeros((count, max_predictions_per_seq), np.int64),
      masked_lm_weights=np.zeros((count, max_predictions_per_seq), np.float32))
  for row, instance in enumerate(instances):
    if (len(instance.tokens) > max_seq_length
        or len(instance.masked_lm_positions) > max_predictions_per_seq):
      raise ValueError(
          f'instance {row}: {len(instance.tokens)} tokens / {len(instance.masked_lm_positions)} '
          f'predictions exceed max_seq_length={max_seq_length} / '
          f'max_predictions_per_seq={max_predictions_per_seq}')
    n, m = len(instance.tokens), len(instance.masked_lm_positions)
    batch.input_ids[row, :n] = tokenizer.convert_tokens_to_ids(instance.tokens)
    batch.input_mask[row, :n] = 1
    batch.segment_ids[row, :n] = instance.segment_ids
    batch.masked_lm_positions[row, :m] = instance.masked_lm_positions
    batch.masked_lm_ids[row, :m] = tokenizer.convert_tokens_to_ids(instance.masked_lm_labels)
    batch.masked_lm_weights[row, :m] = 1.0
  data, lengths = tfrecord_writer.frame_records(*tfrecord_writer.encode_examples(
      *_example_features(batch, use_v2_feature_names, dynamic=False)))
  for index, path in enumerate(output_files):
    with tfrecord_writer.AtomicRecordFile(path, gzip_compress) as f:
      f.write(
          tfrecord_writer.select_records(data, lengths, np.arange(index, count, len(output_files))))
  return count


def _example_features(batch: pi.InstanceBatch, use_v2_feature_names: bool, dynamic: bool):
  names = tfrecord_writer.pretraining_feature_names(use_v2_feature_names, dynamic)
  ints = {names[0]: batch.input_ids, names[1]: batch.input_mask, names[2]: batch.segment_ids}
  floats = {}
  if not dynamic:
    ints['masked_lm_positions'] = batch.masked_lm_positions
    ints['masked_lm_ids'] = batch.masked_lm_ids
    floats['masked_lm_weights'] = batch.masked_lm_weights
  ints['next_sentence_labels'] = batch.next_sentence_labels.reshape(-1, 1)
  return ints, floats
