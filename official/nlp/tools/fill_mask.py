"""Fill-mask predictions: the most likely tokens for each `[MASK]` in a text.

Example:
  >>> tokenizer = tokenization.WordPieceTokenizer.from_vocab_file('vocab.txt')
  >>> predictions = fill_mask(pretrainer, tokenizer, ['Return a [MASK] of the list.'], top_k=3)
  >>> predictions[0][0]   # the first text's first mask: [(token, probability), ...]
  [('copy', 0.41), ('list', 0.12), ('new', 0.05)]
"""

from typing import Dict, List, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tf_keras

from official.nlp.data import tokenization

MASK = '[MASK]'


def encode_masked_texts(tokenizer: tokenization.WordPieceTokenizer, texts: Sequence[str],
                        seq_length: int) -> Tuple[Dict[str, np.ndarray], List[int]]:
  """Token ids of `[CLS] text [SEP]` with each literal `[MASK]` kept as the mask token.

  Returns:
    The model inputs (int32 [len(texts), seq_length], `masked_lm_positions` padded with 0 to the
    most masks in one text) and the number of masks in each text.

  Raises:
    ValueError: a text without `[MASK]`, or longer than `seq_length` tokens.
  """
  ids = tokenizer.token_to_id
  rows, positions = [], []
  for text in texts:
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
    if len(tokens) > seq_length:
      raise ValueError(f'text {text!r} has {len(tokens)} tokens; seq_length is {seq_length}')
    rows.append([ids[t] for t in tokens])
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


def fill_mask(pretrainer: tf_keras.Model, tokenizer: tokenization.WordPieceTokenizer,
              texts: Sequence[str], top_k: int = 5, seq_length: int = 128
              ) -> List[List[List[Tuple[str, float]]]]:
  """Top-k tokens with probabilities for every `[MASK]` of every text.

  Args:
    pretrainer: a `BertPretrainerV2` (outputs `mlm_logits`).
    tokenizer: the tokenizer of the model's vocabulary.
    texts: texts with one or more `[MASK]`.
    top_k: predictions per mask.
    seq_length: padded length of the model inputs.

  Returns:
    `result[text][mask] = [(token, probability), ...]`, best first.
  """
  inputs, counts = encode_masked_texts(tokenizer, texts, seq_length)
  logits = pretrainer({k: tf.constant(v) for k, v in inputs.items()}, training=False)['mlm_logits']
  probabilities, indices = tf.math.top_k(tf.nn.softmax(tf.cast(logits, tf.float32)), k=top_k)
  probabilities, indices = probabilities.numpy(), indices.numpy()
  return [[[(tokenizer.vocab[int(j)], float(p)) for j, p in zip(indices[t, m], probabilities[t, m])]
           for m in range(count)] for t, count in enumerate(counts)]
