"""Model Garden's tagging (NER / POS) data library: word-labelled sentences to tagging records.

Input files hold one `<word>\\t<label>` line per word (test files: `<word>` only, read with label
id 0) and a blank line between sentences. `write_example_to_file` tokenizes each word with a BERT
`FullTokenizer` (`official.nlp.data.full_tokenizer`) and writes the records `TaggingDataLoader`
reads: `input_ids`, `input_mask`, `segment_ids`, `label_ids` int64[seq] (the word's label on its
first sub-word, -1 everywhere else), `sentence_id`, `sub_sentence_id` int64[1]. A sentence longer
than `max_seq_length - 2` sub-words becomes several records, split between words; a single word
of more sub-words than that is written as `[UNK]`. The encoding is
`create_finetuning_data.encode_word_labels`, which also writes our CoNLL records.

Example:
  >>> tokenizer = full_tokenizer.FullTokenizer('vocab.txt', do_lower_case=True)
  >>> metadata = generate_tf_record_from_data_file(
  ...     PanxProcessor(), 'panx', tokenizer, 128, 'out/train.tfrecord', 'out/eval.tfrecord',
  ...     'out/test_{}.tfrecord', full_tokenizer.convert_to_unicode)
  >>> metadata['train_data_size']
  20000
"""

import glob
import logging
import os
from typing import Any, Callable, Dict, List, Optional, Sequence

from official.nlp.data import classifier_data_lib
from official.nlp.data import create_finetuning_data
from official.nlp.data import full_tokenizer

# The label of positions without a loss: later sub-words, [CLS], [SEP], padding.
_PADDING_LABEL_ID = -1


class InputExample:
  """One sentence: its words and their label ids (Model Garden's fields).

  Args:
    sentence_id: the sentence's id (written as `sentence_id`).
    sub_sentence_id: the piece of a split sentence (set by the writer).
    words: the words.
    label_ids: one label id per word (>= 0).

  Example:
    >>> example = InputExample(sentence_id=0)
    >>> example.add_word_and_label_id('Paris', 3)
  """

  def __init__(self, sentence_id: int, sub_sentence_id: int = 0,
               words: Optional[List[str]] = None, label_ids: Optional[List[int]] = None):
    self.sentence_id = sentence_id
    self.sub_sentence_id = sub_sentence_id
    self.words = words if words else []
    self.label_ids = label_ids if label_ids else []

  def add_word_and_label_id(self, word: str, label_id: int) -> None:
    """Appends a word and its label id."""
    self.words.append(word)
    self.label_ids.append(label_id)


def read_examples(path: str, label_list: Sequence[str]) -> List[InputExample]:
  """The sentences of a `<word>\\t<label>` file (see the module docstring), ids from 0.

  Raises:
    FileNotFoundError: no such file.
    ValueError: a line with more than two fields or an unknown label, naming the file and line.

  Example:
    >>> read_examples('panx/dev-en.tsv', PanxProcessor().get_labels())[0].words
    ['EU', 'rejects', 'German', 'call']
  """
  if not os.path.isfile(path):
    raise FileNotFoundError(f'tagging data: no such file: {path!r}')
  index = {label: i for i, label in enumerate(label_list)}
  examples = [InputExample(sentence_id=0)]
  with open(path, encoding='utf-8') as f:
    for number, line in enumerate(f, 1):
      line = line.rstrip('\n')
      if not line:
        if examples[-1].words:
          examples.append(InputExample(sentence_id=len(examples)))
        continue
      fields = line.split('\t')
      if len(fields) > 2:
        raise ValueError(f'{path}:{number}: expected "<word>\\t<label>" or "<word>", found '
                         f'{len(fields)} tab-separated fields')
      label_id = 0
      if len(fields) == 2:
        label = fields[1].strip()
        if label not in index:
          raise ValueError(f'{path}:{number}: label {label!r} is not in the label list '
                           f'{list(label_list)}')
        label_id = index[label]
      examples[-1].add_word_and_label_id(fields[0].strip(), label_id)
  return [example for example in examples if example.words]


class _TsvTaggingProcessor(classifier_data_lib.DataProcessor):
  """XTREME-style tagging data: `train-<lang>.tsv`, `dev-<lang>.tsv`, `test-<lang>.tsv` in
  `data_dir`; test examples per language of `supported_languages`.

  Args:
    process_text_fn: kept for the `DataProcessor` interface (the words are read as text).
    only_use_en_train: train on `train-en.tsv` only (else every language's training file).
    only_use_en_dev: evaluate on `dev-en.tsv` only (else every language's dev file).
  """
  supported_languages: List[str] = []
  LABELS: List[str] = []
  PROCESSOR_NAME = ''

  def __init__(self, process_text_fn: Callable[[Any], str] = full_tokenizer.convert_to_unicode,
               only_use_en_train: bool = True, only_use_en_dev: bool = True):
    super().__init__(process_text_fn)
    self.only_use_en_train = only_use_en_train
    self.only_use_en_dev = only_use_en_dev

  def _split(self, data_dir: str, split: str, only_en: bool) -> List[InputExample]:
    if only_en:
      paths = [os.path.join(data_dir, f'{split}-en.tsv')]
    else:  # every language that has the split
      paths = sorted(glob.glob(os.path.join(data_dir, f'{split}-*.tsv')))
    examples = []
    for path in paths:
      examples.extend(read_examples(path, self.get_labels()))
    return examples

  def get_train_examples(self, data_dir: str) -> List[InputExample]:
    return self._split(data_dir, 'train', self.only_use_en_train)

  def get_dev_examples(self, data_dir: str) -> List[InputExample]:
    return self._split(data_dir, 'dev', self.only_use_en_dev)

  def get_test_examples(self, data_dir: str) -> Dict[str, List[InputExample]]:
    return {language: read_examples(os.path.join(data_dir, f'test-{language}.tsv'),
                                    self.get_labels())
            for language in self.supported_languages}

  def get_labels(self) -> List[str]:
    return list(self.LABELS)

  @classmethod
  def get_processor_name(cls) -> str:  # pylint: disable=arguments-differ
    return cls.PROCESSOR_NAME


class PanxProcessor(_TsvTaggingProcessor):
  """PAN-X (WikiANN) named entities in 40 languages: PER, LOC, ORG in BIO tags."""
  supported_languages = [
      'ar', 'he', 'vi', 'id', 'jv', 'ms', 'tl', 'eu', 'ml', 'ta', 'te', 'af', 'nl', 'en', 'de',
      'el', 'bn', 'hi', 'mr', 'ur', 'fa', 'fr', 'it', 'pt', 'es', 'bg', 'ru', 'ja', 'ka', 'ko',
      'th', 'sw', 'yo', 'my', 'zh', 'kk', 'tr', 'et', 'fi', 'hu']
  LABELS = ['O', 'B-PER', 'I-PER', 'B-LOC', 'I-LOC', 'B-ORG', 'I-ORG']
  PROCESSOR_NAME = 'panx'


class UdposProcessor(_TsvTaggingProcessor):
  """Universal Dependencies part-of-speech tags (17 UPOS tags) in 33 languages."""
  supported_languages = [
      'af', 'ar', 'bg', 'de', 'el', 'en', 'es', 'et', 'eu', 'fa', 'fi', 'fr', 'he', 'hi', 'hu',
      'id', 'it', 'ja', 'kk', 'ko', 'mr', 'nl', 'pt', 'ru', 'ta', 'te', 'th', 'tl', 'tr', 'ur',
      'vi', 'yo', 'zh']
  LABELS = ['ADJ', 'ADP', 'ADV', 'AUX', 'CCONJ', 'DET', 'INTJ', 'NOUN', 'NUM', 'PART', 'PRON',
            'PROPN', 'PUNCT', 'SCONJ', 'SYM', 'VERB', 'X']
  PROCESSOR_NAME = 'udpos'


class _SubwordIds:
  """A `FullTokenizer` seen through the `encode_batch` interface `encode_word_labels` expects."""

  def __init__(self, tokenizer: Any, text_preprocessing: Optional[Callable[[str], str]]):
    self._tokenizer = tokenizer
    self._preprocess = text_preprocessing or (lambda word: word)

  def encode_batch(self, words: Sequence[str]) -> List[List[int]]:
    return [self._tokenizer.convert_tokens_to_ids(self._tokenizer.tokenize(self._preprocess(w)))
            for w in words]

  def convert_tokens_to_ids(self, tokens: Sequence[str]) -> List[int]:
    return self._tokenizer.convert_tokens_to_ids(tokens)


def write_example_to_file(examples: Sequence[InputExample], tokenizer: Any, max_seq_length: int,
                          output_file: str,
                          text_preprocessing: Optional[Callable[[str], str]] = None) -> int:
  """Writes the sentences as tagging records (see the module docstring).

  Args:
    examples: the sentences.
    tokenizer: a `FullTokenizer` (`tokenize`, `convert_tokens_to_ids`).
    max_seq_length: sequence length, with [CLS] and [SEP].
    output_file: the TFRecord file (its directory is created).
    text_preprocessing: applied to each word before tokenizing.

  Returns:
    The number of records written (split sentences count once per piece).

  Raises:
    ValueError: a negative label id, or words and label ids of different lengths.

  Example:
    >>> write_example_to_file(examples, tokenizer, 128, 'out/train.tfrecord')
    1204
  """
  for example in examples:
    if len(example.words) != len(example.label_ids):
      raise ValueError(f'sentence {example.sentence_id}: {len(example.words)} words but '
                       f'{len(example.label_ids)} label ids')
    if any(label < 0 for label in example.label_ids):
      raise ValueError(f'sentence {example.sentence_id}: label ids must be >= 0, found '
                       f'{example.label_ids}')
  features, _ = create_finetuning_data.encode_word_labels(
      [(example.words, example.label_ids) for example in examples],
      _SubwordIds(tokenizer, text_preprocessing), max_seq_length, _PADDING_LABEL_ID,
      sentence_ids=[example.sentence_id for example in examples], long_word='unk')
  create_finetuning_data.write_examples(output_file, features)
  count = int(features['input_ids'].shape[0])
  logging.info('wrote %d records of %d sentences to %s', count, len(examples), output_file)
  return count


def token_classification_meta_data(train_data_size: int, max_seq_length: int, num_labels: int,
                                   eval_data_size: Optional[int] = None,
                                   test_data_size: Any = None,
                                   label_list: Optional[Sequence[str]] = None,
                                   processor_type: Optional[str] = None) -> Dict[str, Any]:
  """Model Garden's metadata dict of tagging records (`task_type: tagging`); the optional entries
  are left out when empty.

  Example:
    >>> token_classification_meta_data(100, 128, 7)['label_shape']
    [128]
  """
  metadata: Dict[str, Any] = {
      'train_data_size': train_data_size, 'max_seq_length': max_seq_length,
      'num_labels': num_labels, 'task_type': 'tagging', 'label_type': 'int',
      'label_shape': [max_seq_length]}
  optional = {'eval_data_size': eval_data_size, 'test_data_size': test_data_size,
              'label_list': list(label_list) if label_list else None,
              'processor_type': processor_type}
  metadata.update({key: value for key, value in optional.items() if value})
  return metadata


def generate_tf_record_from_data_file(processor: classifier_data_lib.DataProcessor,
                                      data_dir: str, tokenizer: Any, max_seq_length: int,
                                      train_data_output_path: str, eval_data_output_path: str,
                                      test_data_output_path: str,
                                      text_preprocessing: Optional[Callable[[str], str]]
                                      ) -> Dict[str, Any]:
  """Writes the train, dev and per-language test records of a tagging processor.

  Args:
    processor: e.g. `PanxProcessor()`.
    data_dir: the directory of its `.tsv` files.
    tokenizer: a `FullTokenizer`.
    max_seq_length: sequence length.
    train_data_output_path: the training records.
    eval_data_output_path: the dev records.
    test_data_output_path: a template with `{}` for the language of each test file.
    text_preprocessing: applied to each word before tokenizing (or None).

  Returns:
    `token_classification_meta_data` with the record counts (`test_data_size`: per language).
  """
  kwargs = dict(tokenizer=tokenizer, max_seq_length=max_seq_length,
                text_preprocessing=text_preprocessing)
  train_size = write_example_to_file(processor.get_train_examples(data_dir),
                                     output_file=train_data_output_path, **kwargs)
  eval_size = write_example_to_file(processor.get_dev_examples(data_dir),
                                    output_file=eval_data_output_path, **kwargs)
  test_sizes = {language: write_example_to_file(examples,
                                                output_file=test_data_output_path.format(language),
                                                **kwargs)
                for language, examples in processor.get_test_examples(data_dir).items()}
  labels = processor.get_labels()
  return token_classification_meta_data(train_size, max_seq_length, len(labels), eval_size,
                                        test_sizes, label_list=labels,
                                        processor_type=processor.get_processor_name())
