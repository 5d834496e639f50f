"""Model Garden's sentence-classification data library: examples, processors and record writing.

A processor (`DataProcessor`) turns a data set into `InputExample`s (`text_a`, optional `text_b`,
`label`); `file_based_convert_examples_to_features` tokenizes them with a BERT `FullTokenizer`
(`official.nlp.data.full_tokenizer`) and writes Model Garden's records, which
`SentencePredictionDataLoader` reads: `input_ids`, `input_mask`, `segment_ids` int64[seq],
`label_ids` int64[1] (float[1] with `label_type=float`), `is_real_example` int64[1], `example_id`
int64[1] and, when the examples carry one, `weight` float[1].
`generate_tf_record_from_data_file` does the train/dev/test splits of one processor and returns
Model Garden's metadata dict.

The GLUE and SuperGLUE processors read TensorFlow Datasets (`glue/*`, `super_glue/*`; the optional
`tensorflow-datasets` package), as Model Garden's do. For files of your own, use
`create_finetuning_data` (CSV/TSV/JSONL) or a `DataProcessor` subclass.

Example:
  >>> tokenizer = full_tokenizer.FullTokenizer('vocab.txt', do_lower_case=True)
  >>> examples = [InputExample('train-0', 'the cat sat', label='1')]
  >>> file_based_convert_examples_to_features(examples, ['0', '1'], 128, tokenizer,
  ...                                         'out/train.tfrecord')
"""

import csv
import json
import logging
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from official.nlp.data import create_finetuning_data
from official.nlp.data import full_tokenizer
from official.nlp.data.tokenization import CLS_TOKEN, SEP_TOKEN

Label = Union[str, int, float, None]


class InputExample:
  """One example: a text or a text pair and its label (Model Garden's fields).

  Args:
    guid: a unique id, e.g. 'train-12' (for messages).
    text_a: the first text.
    text_b: the second text of a pair, or None.
    label: the class name (mapped through the label list), a number (regression, or an id when
      there is no label list), or None (no `label_ids` in the records).
    weight: an optional per-example weight (written as `weight`).
    example_id: an optional id (written as `example_id`; default: the example's index).

  Example:
    >>> InputExample('dev-3', 'A man sings.', 'Someone sings.', label='entailment')
  """

  def __init__(self, guid: Any, text_a: str, text_b: Optional[str] = None, label: Label = None,
               weight: Optional[float] = None, example_id: Optional[int] = None):
    self.guid = guid
    self.text_a = text_a
    self.text_b = text_b
    self.label = label
    self.weight = weight
    self.example_id = example_id


class InputFeatures:
  """One example as padded model inputs (lists of `max_seq_length` ints) and its label id."""

  def __init__(self, input_ids: List[int], input_mask: List[int], segment_ids: List[int],
               label_id: Label, is_real_example: bool = True, weight: Optional[float] = None,
               example_id: Optional[int] = None):
    self.input_ids = input_ids
    self.input_mask = input_mask
    self.segment_ids = segment_ids
    self.label_id = label_id
    self.is_real_example = is_real_example
    self.weight = weight
    self.example_id = example_id


class DataProcessor:
  """A data set's splits as `InputExample`s (subclass it; Model Garden's interface).

  Args:
    process_text_fn: applied to every text read (default: bytes -> str).

  Attributes:
    is_regression: the labels are numbers (metadata `task_type: bert_regression`).
    label_type: `float` writes float labels; None or `int` writes ids.
  """

  def __init__(self, process_text_fn: Callable[[Any], str] = full_tokenizer.convert_to_unicode):
    self.process_text_fn = process_text_fn
    self.is_regression = False
    self.label_type: Optional[type] = None

  def get_train_examples(self, data_dir: Optional[str]) -> List[InputExample]:
    """The training examples."""
    raise NotImplementedError(f'{type(self).__name__} has no training split')

  def get_dev_examples(self, data_dir: Optional[str]) -> List[InputExample]:
    """The evaluation examples."""
    raise NotImplementedError(f'{type(self).__name__} has no dev split')

  def get_test_examples(self, data_dir: Optional[str]
                        ) -> Union[List[InputExample], Dict[str, List[InputExample]]]:
    """The test examples (or `{language: examples}`)."""
    raise NotImplementedError(f'{type(self).__name__} has no test split')

  def get_labels(self) -> List[str]:
    """The class names, index = label id."""
    raise NotImplementedError(f'{type(self).__name__} does not define get_labels')

  @staticmethod
  def get_processor_name() -> str:
    """The data set's name (metadata `processor_type`)."""
    raise NotImplementedError('the processor does not define get_processor_name')

  @classmethod
  def _read_tsv(cls, input_file: str, quotechar: Optional[str] = None) -> List[List[str]]:
    """The rows of a tab-separated file."""
    with open(input_file, encoding='utf-8', newline='') as f:
      return list(csv.reader(f, delimiter='\t', quotechar=quotechar))

  @classmethod
  def _read_jsonl(cls, input_file: str) -> List[Any]:
    """The objects of a JSON-lines file (blank lines skipped)."""
    with open(input_file, encoding='utf-8') as f:
      return [json.loads(line) for line in f if line.strip()]

  def featurize_example(self, ex_index: int, example: InputExample, label_list: Sequence[str],
                        max_seq_length: int, tokenizer: Any) -> InputFeatures:
    """`convert_single_example` (override for another layout, as `WiCProcessor` does)."""
    return convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer)


class DefaultGLUEDataProcessor(DataProcessor):
  """A processor whose splits are TFDS splits 'train', 'validation' and 'test' (`data_dir` is not
  read): subclasses implement `_create_examples_tfds(split)`."""

  def get_train_examples(self, data_dir: Optional[str]) -> List[InputExample]:
    return self._create_examples_tfds('train')

  def get_dev_examples(self, data_dir: Optional[str]) -> List[InputExample]:
    return self._create_examples_tfds('validation')

  def get_test_examples(self, data_dir: Optional[str]) -> List[InputExample]:
    return self._create_examples_tfds('test')

  def _create_examples_tfds(self, set_type: str) -> List[InputExample]:
    raise NotImplementedError(f'{type(self).__name__} does not define _create_examples_tfds')


def _load_tfds(name: str, split: str) -> List[Dict[str, Any]]:
  """The rows of TFDS data set `name`'s `split` as numpy dicts, sorted by `idx`."""
  try:
    # Function-level: optional dependency (tensorflow-datasets), only the TFDS processors need it.
    import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ImportError(f'reading {name!r} needs TensorFlow Datasets: pip install '
                      'tensorflow-datasets (or write the records with create_finetuning_data from '
                      'CSV/TSV/JSONL files)') from None
  rows = list(tfds.load(name, split=split, try_gcs=True).as_numpy_iterator())
  return sorted(rows, key=lambda row: int(row['idx']))


class _TfdsProcessor(DefaultGLUEDataProcessor):
  """A GLUE/SuperGLUE TFDS data set described by class attributes.

  `TFDS_NAME`; `TEXT_KEYS`: the row keys of text_a and text_b (None: single text); `LABELS`: the
  class names, index = the row's `label`; `TEST_LABEL`: the placeholder label of the (unlabelled)
  test split (default: the first class).
  """
  TFDS_NAME = ''
  PROCESSOR_NAME = ''
  TEXT_KEYS: Tuple[str, Optional[str]] = ('sentence', None)
  LABELS: Tuple[str, ...] = ()
  TEST_LABEL: Optional[str] = None

  def get_labels(self) -> List[str]:
    return list(self.LABELS)

  @classmethod
  def get_processor_name(cls) -> str:  # pylint: disable=arguments-differ
    return cls.PROCESSOR_NAME

  def _label(self, row: Dict[str, Any], set_type: str) -> Label:
    if set_type.startswith('test'):
      return self.TEST_LABEL if self.TEST_LABEL is not None else self.LABELS[0]
    return self.LABELS[int(row['label'])]

  def _example(self, row: Dict[str, Any], set_type: str) -> InputExample:
    key_a, key_b = self.TEXT_KEYS
    return InputExample(
        guid=f'{set_type}-{int(row["idx"])}', text_a=self.process_text_fn(row[key_a]),
        text_b=self.process_text_fn(row[key_b]) if key_b else None,
        label=self._label(row, set_type))

  def _create_examples_tfds(self, set_type: str) -> List[InputExample]:
    return [self._example(row, set_type) for row in _load_tfds(self.TFDS_NAME, set_type)]


class ColaProcessor(_TfdsProcessor):
  """GLUE CoLA (`glue/cola`): is the sentence grammatical ('0', '1')."""
  TFDS_NAME, PROCESSOR_NAME, LABELS = 'glue/cola', 'COLA', ('0', '1')


class SstProcessor(_TfdsProcessor):
  """GLUE SST-2 (`glue/sst2`): sentence sentiment ('0', '1')."""
  TFDS_NAME, PROCESSOR_NAME, LABELS = 'glue/sst2', 'SST-2', ('0', '1')


class MrpcProcessor(_TfdsProcessor):
  """GLUE MRPC (`glue/mrpc`): are the sentences paraphrases ('0', '1')."""
  TFDS_NAME, PROCESSOR_NAME, LABELS = 'glue/mrpc', 'MRPC', ('0', '1')
  TEXT_KEYS = ('sentence1', 'sentence2')


class QqpProcessor(_TfdsProcessor):
  """GLUE QQP (`glue/qqp`): are the questions duplicates ('0', '1')."""
  TFDS_NAME, PROCESSOR_NAME, LABELS = 'glue/qqp', 'QQP', ('0', '1')
  TEXT_KEYS = ('question1', 'question2')


class QnliProcessor(_TfdsProcessor):
  """GLUE QNLI (`glue/qnli`): does the sentence answer the question."""
  TFDS_NAME, PROCESSOR_NAME = 'glue/qnli', 'QNLI'
  LABELS = ('entailment', 'not_entailment')
  TEXT_KEYS = ('question', 'sentence')


class RteProcessor(_TfdsProcessor):
  """GLUE RTE (`glue/rte`): two-class entailment."""
  TFDS_NAME, PROCESSOR_NAME = 'glue/rte', 'RTE'
  LABELS = ('entailment', 'not_entailment')
  TEXT_KEYS = ('sentence1', 'sentence2')


class WnliProcessor(_TfdsProcessor):
  """GLUE WNLI (`glue/wnli`): pronoun-resolution entailment ('0', '1')."""
  TFDS_NAME, PROCESSOR_NAME, LABELS = 'glue/wnli', 'WNLI', ('0', '1')
  TEXT_KEYS = ('sentence1', 'sentence2')


class StsBProcessor(_TfdsProcessor):
  """GLUE STS-B (`glue/stsb`): sentence similarity in [0, 5] (regression, float labels)."""
  TFDS_NAME, PROCESSOR_NAME = 'glue/stsb', 'STS-B'
  TEXT_KEYS = ('sentence1', 'sentence2')

  def __init__(self, process_text_fn: Callable[[Any], str] = full_tokenizer.convert_to_unicode):
    super().__init__(process_text_fn)
    self.is_regression = True
    self.label_type = float

  def _label(self, row: Dict[str, Any], set_type: str) -> Label:
    return 0.0 if set_type.startswith('test') else float(row['label'])


class MnliProcessor(_TfdsProcessor):
  """GLUE MNLI (`glue/mnli`): three-class entailment; text_a is the hypothesis (as in Model
  Garden).

  Args:
    mnli_type: 'matched' or 'mismatched': the dev and test splits read.
    process_text_fn: applied to every text.
  """
  TFDS_NAME, PROCESSOR_NAME = 'glue/mnli', 'MNLI'
  LABELS = ('contradiction', 'entailment', 'neutral')
  TEXT_KEYS = ('hypothesis', 'premise')

  def __init__(self, mnli_type: str = 'matched',
               process_text_fn: Callable[[Any], str] = full_tokenizer.convert_to_unicode):
    super().__init__(process_text_fn)
    if mnli_type not in ('matched', 'mismatched'):
      raise ValueError(f"mnli_type must be 'matched' or 'mismatched', found {mnli_type!r}")
    self.mnli_type = mnli_type

  def get_dev_examples(self, data_dir: Optional[str]) -> List[InputExample]:
    return self._create_examples_tfds(f'validation_{self.mnli_type}')

  def get_test_examples(self, data_dir: Optional[str]) -> List[InputExample]:
    return self._create_examples_tfds(f'test_{self.mnli_type}')


class BoolQProcessor(_TfdsProcessor):
  """SuperGLUE BoolQ (`super_glue/boolq`): the yes/no answer to a question about a passage."""
  TFDS_NAME, PROCESSOR_NAME = 'super_glue/boolq', 'BoolQ'
  LABELS, TEST_LABEL = ('True', 'False'), 'False'
  TEXT_KEYS = ('question', 'passage')


class CBProcessor(_TfdsProcessor):
  """SuperGLUE CommitmentBank (`super_glue/cb`): three-class entailment."""
  TFDS_NAME, PROCESSOR_NAME = 'super_glue/cb', 'CB'
  LABELS = ('entailment', 'neutral', 'contradiction')
  TEXT_KEYS = ('premise', 'hypothesis')


class SuperGLUERTEProcessor(_TfdsProcessor):
  """SuperGLUE RTE (`super_glue/rte`): two-class entailment."""
  TFDS_NAME, PROCESSOR_NAME = 'super_glue/rte', 'RTESuperGLUE'
  LABELS = ('entailment', 'not_entailment')
  TEXT_KEYS = ('premise', 'hypothesis')


class WiCInputExample(InputExample):
  """A Words-in-Context example: two sentences and the `word` they share (label: 0 or 1)."""

  def __init__(self, guid: Any, text_a: str, text_b: Optional[str] = None, label: Label = None,
               word: Optional[str] = None, weight: Optional[float] = None,
               example_id: Optional[int] = None):
    super().__init__(guid, text_a, text_b, label, weight, example_id)
    self.word = word


class WiCProcessor(_TfdsProcessor):
  """SuperGLUE WiC (`super_glue/wic`): is `word` used in the same sense in both sentences.

  Labels are written as ids (no label list); the inputs are `[CLS] s1 [SEP] s2 [SEP] word [SEP]`
  with segment ids 0, 1 and 2.
  """
  TFDS_NAME, PROCESSOR_NAME = 'super_glue/wic', 'RTESuperGLUE'  # Model Garden's name
  TEXT_KEYS = ('sentence1', 'sentence2')

  def _label(self, row: Dict[str, Any], set_type: str) -> Label:
    return 0 if set_type.startswith('test') else int(row['label'])

  def _example(self, row: Dict[str, Any], set_type: str) -> InputExample:
    example = super()._example(row, set_type)
    return WiCInputExample(example.guid, example.text_a, example.text_b, example.label,
                           word=self.process_text_fn(row['word']))

  def featurize_example(self, ex_index: int, example: InputExample, label_list: Sequence[str],
                        max_seq_length: int, tokenizer: Any) -> InputFeatures:
    """The sentence pair, then the word as a third segment; the sentences are cut to fit."""
    del ex_index, label_list
    word = tokenizer.tokenize(example.word)
    if len(word) + 4 > max_seq_length:
      raise ValueError(f'{example.guid}: the word {example.word!r} ({len(word)} tokens) does not '
                       f'fit in max_seq_length={max_seq_length} with two sentences')
    tokens, segments, _ = create_finetuning_data.pack_pair(
        tokenizer.tokenize(example.text_a), tokenizer.tokenize(example.text_b),
        max_seq_length - len(word) - 1, CLS_TOKEN, SEP_TOKEN)
    tokens += word + [SEP_TOKEN]
    segments += [2] * (len(word) + 1)
    return _features(example, tokenizer.convert_tokens_to_ids(tokens), segments, max_seq_length,
                     example.label)


def _features(example: InputExample, ids: List[int], segments: List[int], max_seq_length: int,
              label_id: Label) -> InputFeatures:
  """`InputFeatures` of unpadded ids and segment ids (zero padding to `max_seq_length`)."""
  padding = [0] * (max_seq_length - len(ids))
  return InputFeatures(input_ids=ids + padding, input_mask=[1] * len(ids) + padding,
                       segment_ids=segments + padding, label_id=label_id, is_real_example=True,
                       weight=example.weight, example_id=example.example_id)


def convert_single_example(ex_index: int, example: InputExample, label_list: Sequence[str],
                           max_seq_length: int, tokenizer: Any) -> InputFeatures:
  """Tokenizes one example into `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, zero-padded.

  Args:
    ex_index: the example's index (the first few are logged).
    example: the example.
    label_list: class names, index = label id; empty or None: the label is written as it is.
    max_seq_length: sequence length (the longer text of a pair is cut first).
    tokenizer: a `FullTokenizer` (`tokenize`, `convert_tokens_to_ids`).

  Returns:
    The example's `InputFeatures`.

  Raises:
    ValueError: the label is not in `label_list`.

  Example:
    >>> convert_single_example(0, InputExample('x', 'the cat', label='1'), ['0', '1'], 8,
    ...                        tokenizer).input_ids
    [2, 5, 6, 3, 0, 0, 0, 0]
  """
  tokens_a = tokenizer.tokenize(example.text_a)
  tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
  tokens, segments, _ = create_finetuning_data.pack_pair(tokens_a, tokens_b or None,
                                                         max_seq_length, CLS_TOKEN, SEP_TOKEN)
  label_id = example.label
  if label_list:
    index = {name: i for i, name in enumerate(label_list)}
    if example.label not in index:
      raise ValueError(f'{example.guid}: label {example.label!r} is not in the label list '
                       f'{list(label_list)}')
    label_id = index[example.label]
  if ex_index < 5:
    logging.info('example %s: tokens %s, label %r (id %r)', example.guid, ' '.join(tokens),
                 example.label, label_id)
  return _features(example, tokenizer.convert_tokens_to_ids(tokens), segments, max_seq_length,
                   label_id)


def _column(features: Sequence[InputFeatures], name: str, output_file: str) -> Optional[list]:
  """The values of attribute `name` of every feature, or None when none has one."""
  values = [getattr(f, name) for f in features]
  present = [v is not None for v in values]
  if not any(present):
    return None
  if not all(present):
    raise ValueError(f'{output_file}: example {present.index(False)} has no {name} but others '
                     'have one (give every example one, or none)')
  return values


def file_based_convert_examples_to_features(
    examples: Sequence[InputExample], label_list: Sequence[str], max_seq_length: int,
    tokenizer: Any, output_file: str, label_type: Optional[type] = None,
    featurize_fn: Optional[Callable[..., InputFeatures]] = None) -> None:
  """Writes the examples as Model Garden's sentence-prediction records (see the module docstring).

  Args:
    examples: the examples.
    label_list: class names, index = label id (empty: labels are written as they are).
    max_seq_length: sequence length.
    tokenizer: a `FullTokenizer`.
    output_file: the TFRecord file (its directory is created).
    label_type: `float` writes float labels (regression); otherwise int64 ids.
    featurize_fn: `(ex_index, example, label_list, max_seq_length, tokenizer) -> InputFeatures`
      (default `convert_single_example`).

  Raises:
    ValueError: an unknown label, or labels / weights given for only some examples.

  Example:
    >>> file_based_convert_examples_to_features(examples, ['0', '1'], 128, tokenizer,
    ...                                         'out/dev.tfrecord')
  """
  featurize_fn = featurize_fn or convert_single_example
  features = [featurize_fn(i, example, label_list, max_seq_length, tokenizer)
              for i, example in enumerate(examples)]
  int_features = {
      'input_ids': np.asarray([f.input_ids for f in features], np.int64),
      'input_mask': np.asarray([f.input_mask for f in features], np.int64),
      'segment_ids': np.asarray([f.segment_ids for f in features], np.int64)}
  for name, array in int_features.items():
    if features and array.shape != (len(features), max_seq_length):
      raise ValueError(f'{output_file}: featurize_fn returned {name} of shape {array.shape[1:]}, '
                       f'expected ({max_seq_length},)')
  float_features = {}
  labels = _column(features, 'label_id', output_file)
  if labels is not None:
    if label_type is float:
      float_features['label_ids'] = np.asarray(labels, np.float32).reshape(-1, 1)
    else:
      int_features['label_ids'] = np.asarray(labels, np.int64).reshape(-1, 1)
  int_features['is_real_example'] = np.asarray(
      [int(f.is_real_example) for f in features], np.int64).reshape(-1, 1)
  ids = [i if f.example_id is None else f.example_id for i, f in enumerate(features)]
  int_features['example_id'] = np.asarray(ids, np.int64).reshape(-1, 1)
  weights = _column(features, 'weight', output_file)
  if weights is not None:
    float_features['weight'] = np.asarray(weights, np.float32).reshape(-1, 1)
  create_finetuning_data.write_examples(output_file, int_features, float_features)
  logging.info('wrote %d examples to %s', len(features), output_file)


def generate_tf_record_from_data_file(processor: DataProcessor, data_dir: Optional[str],
                                      tokenizer: Any,
                                      train_data_output_path: Optional[str] = None,
                                      eval_data_output_path: Optional[str] = None,
                                      test_data_output_path: Optional[str] = None,
                                      max_seq_length: int = 128) -> Dict[str, Any]:
  """Writes the train, dev and test records of a processor's splits.

  Args:
    processor: the data set's `DataProcessor`.
    data_dir: passed to the processor's `get_*_examples`.
    tokenizer: a `FullTokenizer`.
    train_data_output_path: the training records (None: not written).
    eval_data_output_path: the dev records (None: not written).
    test_data_output_path: the test records (None: not written); a template with `{}` when the
      processor returns test examples per language.
    max_seq_length: sequence length.

  Returns:
    Model Garden's metadata: `processor_type`, `train_data_size`, `max_seq_length`, `task_type`
    ('bert_classification' with `num_labels`, or 'bert_regression' with `label_type`),
    `eval_data_size`, `test_data_size` (or `test_<language>_data_size`), `has_sample_weights`.

  Raises:
    ValueError: neither a train nor an eval output path.

  Example:
    >>> generate_tf_record_from_data_file(MrpcProcessor(), None, tokenizer,
    ...                                   train_data_output_path='mrpc/train.tfrecord',
    ...                                   eval_data_output_path='mrpc/dev.tfrecord')
    {'processor_type': 'MRPC', 'train_data_size': 3668, ...}
  """
  if not (train_data_output_path or eval_data_output_path):
    raise ValueError('generate_tf_record_from_data_file: give train_data_output_path or '
                     'eval_data_output_path (both are None)')
  label_list = processor.get_labels()
  label_type = getattr(processor, 'label_type', None)

  def write(examples: Sequence[InputExample], path: str) -> int:
    file_based_convert_examples_to_features(examples, label_list, max_seq_length, tokenizer, path,
                                            label_type, processor.featurize_example)
    return len(examples)

  metadata: Dict[str, Any] = {'processor_type': processor.get_processor_name(),
                              'train_data_size': 0, 'max_seq_length': max_seq_length}
  if train_data_output_path:
    metadata['train_data_size'] = write(processor.get_train_examples(data_dir),
                                        train_data_output_path)
  if eval_data_output_path:
    metadata['eval_data_size'] = write(processor.get_dev_examples(data_dir),
                                       eval_data_output_path)
  if test_data_output_path:
    test_examples = processor.get_test_examples(data_dir)
    if isinstance(test_examples, dict):
      for language, examples in test_examples.items():
        metadata[f'test_{language}_data_size'] = write(
            examples, test_data_output_path.format(language))
    else:
      metadata['test_data_size'] = write(test_examples, test_data_output_path)
  if getattr(processor, 'is_regression', False):
    metadata['task_type'] = 'bert_regression'
    metadata['label_type'] = 'float' if label_type is float else 'int'
  else:
    metadata['task_type'] = 'bert_classification'
    metadata['num_labels'] = len(label_list)
  if getattr(processor, 'weight_key', False):
    metadata['has_sample_weights'] = True
  return metadata
