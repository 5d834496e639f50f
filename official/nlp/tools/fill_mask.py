r"""Fill-mask predictions: the most likely tokens for each `[MASK]` in a text.

The model is a Keras `BertPretrainerV2` or an `InferenceModel` (a training model_dir or a SavedModel
loaded by `official.nlp.serving.inference`). The command line takes either kind of directory, or a
Hugging Face folder with a masked-LM head (config.json + model.safetensors, BERT or ModernBERT):

  python -m official.nlp.tools.fill_mask --model_dir=runs/tiny \
    --text='Paris is the [MASK] of France.'

Any tokenizer: a vocab.txt (WordPiece), or a tokenizer.json (BPE, Unigram, ...) found with the model
(a model_dir trained on BPE records holds one) or given by --vocab_file. With a tokenizer.json the
text is encoded by the tokenizer itself (`[MASK]` stands for its mask token, e.g. `<mask>`) and the
predicted tokens are decoded (`Ġcapital` is shown as `capital`).

Errors print one line and exit 1; bad flags (including a --seq_length above the model's
position embeddings) exit 2.

Example:
  >>> tokenizer = tokenization.WordPieceTokenizer.from_vocab_file('vocab.txt')
  >>> predictions = fill_mask(pretrainer, tokenizer, ['Return a [MASK] of the list.'], top_k=3)
  >>> predictions[0][0]   # the first text's first mask: [(token, probability), ...]
  [('copy', 0.41), ('list', 0.12), ('new', 0.05)]
"""

from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)

import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf
import tf_keras
from absl import flags

from official.common import cli_utils
from official.nlp.data import tokenization
from official.nlp.data import vocab_assets
from official.nlp.serving import inference
from official.nlp.serving import serving_signatures
from official.nlp.tools import convert_checkpoint
from official.nlp.tools import hf_bert

MASK = '[MASK]'
PROGRAM = 'fill_mask'
# Mask tokens a --text may be written with before the tokenizer is loaded (its own is checked then).
_MASK_SPELLINGS = (MASK, '<mask>')


def _wordpiece_rows(tokenizer: tokenization.WordPieceTokenizer, text: str
                    ) -> Tuple[List[int], List[int]]:
  """BERT: each piece between literal `[MASK]`s tokenized alone, the masks kept as `[MASK]`."""
  pieces = text.split(MASK)
  if len(pieces) < 2:
    raise ValueError(f'text {text!r} has no {MASK}')
  tokens = ['[CLS]']
  mask_positions = []
  for i, piece in enumerate(pieces):
    if i:
      mask_positions.append(len(tokens))
      tokens.append(MASK)
    tokens.extend(tokenizer.tokenize(piece))
  tokens.append('[SEP]')
  return [tokenizer.token_to_id[t] for t in tokens], mask_positions


def _subword_rows(tokenizer: tokenization.SubwordTokenizer, text: str
                  ) -> Tuple[List[int], List[int]]:
  """Any tokenizer.json: the whole text encoded by the tokenizer (`[MASK]` as its mask token, which
  its own rules match, e.g. absorbing the space before `<mask>`), between its cls and sep tokens."""
  mask = tokenizer.special_tokens['mask']
  ids = [tokenizer.cls_id] + tokenizer.encode(text.replace(MASK, mask)) + [tokenizer.sep_id]
  mask_positions = [i for i, token in enumerate(ids) if token == tokenizer.mask_id]
  if not mask_positions:
    raise ValueError(f'text {text!r} has no {MASK}' + (f' (nor {mask})' if mask != MASK else ''))
  return ids, mask_positions


def encode_masked_texts(tokenizer: tokenization.SubwordTokenizer, texts: Sequence[str],
                        seq_length: int) -> Tuple[Dict[str, np.ndarray], List[int]]:
  """Token ids of `[CLS] text [SEP]` with each literal `[MASK]` kept as the mask token.

  A `WordPieceTokenizer` tokenizes the text between the masks; another tokenizer (BPE, ...)
  encodes the whole text, `[MASK]` written as its mask token, between its cls and sep tokens.

  Returns:
    The model inputs (int32 [len(texts), seq_length], `masked_lm_positions` padded with 0 to the
    most masks in one text) and the number of masks in each text.

  Raises:
    ValueError: a text without `[MASK]`, or longer than `seq_length` tokens.

  Example:
    >>> inputs, counts = encode_masked_texts(tokenizer, ['Paris is the [MASK] of France.'], 16)
  """
  rows, positions = [], []
  for text in texts:
    if isinstance(tokenizer, tokenization.WordPieceTokenizer):
      row, mask_positions = _wordpiece_rows(tokenizer, text)
    else:
      row, mask_positions = _subword_rows(tokenizer, text)
    if len(row) > seq_length:
      raise ValueError(f'text {text!r} has {len(row)} tokens; seq_length is {seq_length}')
    rows.append(row)
    positions.append(mask_positions)
  num_predictions = max(len(p) for p in positions)
  word_ids = np.zeros([len(texts), seq_length], np.int32)
  mask = np.zeros_like(word_ids)
  masked_positions = np.zeros([len(texts), num_predictions], np.int32)
  for i, (row, mask_positions) in enumerate(zip(rows, positions)):
    word_ids[i, :len(row)] = row
    mask[i, :len(row)] = 1
    masked_positions[i, :len(mask_positions)] = mask_positions
  inputs = {'input_word_ids': word_ids, 'input_mask': mask,
            'input_type_ids': np.zeros_like(word_ids), 'masked_lm_positions': masked_positions}
  return inputs, [len(p) for p in positions]


def token_text(tokenizer: tokenization.SubwordTokenizer, token_id: int) -> str:
  """How a predicted token is shown: a WordPiece token as it is (`##ing`); another tokenizer's
  through its decoder, without surrounding spaces (`Ġcapital` -> `capital`), or as it is when that
  leaves nothing.

  Example:
    >>> token_text(bpe, bpe.token_to_id['\u0120capital'])
    'capital'
  """
  token = tokenizer.vocab[token_id]
  if isinstance(tokenizer, tokenization.WordPieceTokenizer):
    return token
  return tokenizer.decode([token_id]).strip() or token


def fill_mask(pretrainer: Union[tf_keras.Model, inference.InferenceModel],
              tokenizer: tokenization.SubwordTokenizer, texts: Sequence[str], top_k: int = 5,
              seq_length: int = 128) -> List[List[List[Tuple[str, float]]]]:
  """Top-k tokens with probabilities for every `[MASK]` of every text.

  Args:
    pretrainer: a `BertPretrainerV2` (outputs `mlm_logits`), or an `InferenceModel` with a
      `fill_mask` function (e.g. a SavedModel from `export_savedmodel`).
    tokenizer: the tokenizer of the model's vocabulary (WordPiece, or any tokenizer.json's).
    texts: texts with one or more `[MASK]`.
    top_k: predictions per mask.
    seq_length: padded length of the model inputs.

  Returns:
    `result[text][mask] = [(token, probability), ...]`, best first (tokens as `token_text`
    shows them).

  Raises:
    ValueError: `seq_length` above the model's position embeddings; a text without `[MASK]` or
      longer than `seq_length` tokens.
  """
  if isinstance(pretrainer, inference.InferenceModel):
    pretrainer.check_seq_length(seq_length)
  else:
    limit = serving_signatures.max_sequence_length(serving_signatures.find_encoder(pretrainer))
    if limit is not None and seq_length > limit:
      raise ValueError(f'seq_length={seq_length} exceeds the {limit} position embeddings of '
                       f'{pretrainer.name!r}; expected at most {limit}')
  inputs, counts = encode_masked_texts(tokenizer, texts, seq_length)
  if isinstance(pretrainer, inference.InferenceModel):
    indices, probabilities = pretrainer.fill_mask(inputs, top_k)
  else:
    logits = pretrainer({k: tf.constant(v) for k, v in inputs.items()},
                        training=False)['mlm_logits']
    indices, probabilities = serving_signatures.top_k_probabilities(logits, top_k)
    indices, probabilities = indices.numpy(), probabilities.numpy()
  return [[[(token_text(tokenizer, int(j)), float(p))
            for j, p in zip(indices[t, m], probabilities[t, m])]
           for m in range(count)] for t, count in enumerate(counts)]


def format_predictions(texts: Sequence[str], predictions: List[List[List[Tuple[str, float]]]]
                       ) -> str:
  """The text, then one line per `[MASK]`: `  [MASK] 1: token (0.4123), token (0.1234), ...`."""
  lines = []
  for text, masks in zip(texts, predictions):
    lines.append(text)
    for number, guesses in enumerate(masks, start=1):
      lines.append(f'  {MASK} {number}: ' + ', '.join(f'{t} ({p:.4f})' for t, p in guesses))
  return '\n'.join(lines)


def is_hf_folder(path: str) -> bool:
  """A Hugging Face model folder (config.json and safetensors weights, no params.yaml)."""
  return (os.path.isfile(os.path.join(path, hf_bert.CONFIG_NAME))
          and not os.path.isfile(os.path.join(path, convert_checkpoint.PARAMS_NAME))
          and any(os.path.isfile(os.path.join(path, name))
                  for name in (hf_bert.WEIGHTS_NAME, hf_bert.INDEX_NAME)))


def _hf_model(folder: str, vocab_file: Optional[str], do_lower_case: Optional[bool],
              seq_length: Optional[int]) -> Tuple[tf_keras.Model, tokenization.SubwordTokenizer,
                                                  int]:
  """(the pretrainer, its tokenizer, the input length) of a Hugging Face folder."""
  pretrainer = convert_checkpoint.read('hf', folder)
  if not isinstance(pretrainer, tf_keras.Model) or not hasattr(pretrainer, 'masked_lm'):
    raise ValueError(f'{folder}: a Hugging Face model without a masked-LM head; expected a '
                     '*ForMaskedLM (or *ForPreTraining) folder')
  tokenizer = vocab_assets.load_tokenizer(vocab_file or folder, do_lower_case)
  limit = serving_signatures.max_sequence_length(serving_signatures.find_encoder(pretrainer))
  return pretrainer, tokenizer, seq_length or min(128, limit or 128)


def _define_flags() -> flags.FlagValues:
  fv = flags.FlagValues()
  cli_utils.define_model_flags(fv)
  flags.DEFINE_multi_string('text', [], 'A text with one or more [MASK] (repeat the flag for '
                            'several).', flag_values=fv)
  flags.DEFINE_integer('top_k', 5, 'Predictions per [MASK].', lower_bound=1, flag_values=fv)
  flags.DEFINE_integer('seq_length', None, 'Input length (default: the model\'s seq_length).',
                       lower_bound=3, flag_values=fv)
  flags.mark_flags_as_required(['model_dir'], flag_values=fv)
  return fv


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Console entry point (`mlm-fill-mask`): the top-k tokens for each [MASK] of each --text."""
  fv = _define_flags()
  status = cli_utils.parse_flags(fv, argv, PROGRAM, __doc__)
  if status is not None:
    return status
  if not fv.text:
    return cli_utils.error(PROGRAM, "--text is required, e.g. --text='Paris is the [MASK] of "
                           "France.'")
  for text in fv.text:  # before loading the model: a typo should not cost a model load
    if not any(mask in text for mask in _MASK_SPELLINGS):
      return cli_utils.error(PROGRAM, f'--text={text!r} has no {MASK}; expected at least one')
  try:
    if os.path.isdir(fv.model_dir) and is_hf_folder(fv.model_dir):
      pretrainer, tokenizer, seq_length = _hf_model(fv.model_dir, fv.vocab_file, fv.do_lower_case,
                                                    fv.seq_length)
      predictions = fill_mask(pretrainer, tokenizer, fv.text, top_k=fv.top_k,
                              seq_length=seq_length)
      print(format_predictions(fv.text, predictions))
      return 0
    model = inference.load_inference_model(fv.model_dir, fv.checkpoint_path)
    if fv.seq_length:
      try:
        model.check_seq_length(fv.seq_length, '--seq_length')
      except ValueError as e:
        return cli_utils.error(PROGRAM, str(e), status=2)
    tokenizer = model.load_tokenizer(fv.vocab_file, fv.do_lower_case)
    predictions = fill_mask(model, tokenizer, fv.text, top_k=fv.top_k,
                            seq_length=fv.seq_length or model.seq_length)
  except cli_utils.USER_ERRORS as e:
    return cli_utils.error(PROGRAM, cli_utils.message_of(e))
  print(format_predictions(fv.text, predictions))
  return 0


if __name__ == '__main__':
  sys.exit(main())
