"""Word senses from contextual embeddings: nearest neighbours of an ambiguous word's occurrences.

Each sentence holds one occurrence of an ambiguous word with a sense label ('return' as a verb or
a noun, 'set' as a verb or a type, ...). The example embeds every word of every sentence in its
context (`embed.token_embeddings`), standardises the vectors with z-score stats fitted on all
words of these sentences (`embedding_stats`), and lists, for each occurrence, the most
cosine-similar other occurrences of the same word. If the encoder tells the senses apart, the
nearest neighbour usually has the same sense; the last line gives that fraction, and the fraction
a random neighbour would reach (chance). The senses occur at several positions in their
sentences, so that the position embeddings alone cannot sort them.

The default sentences suit a model pretrained on Python docstrings (`make demo`); give your own
as `--sentences_file` (tab-separated `word<TAB>sense<TAB>sentence`, one a line).

Usage:
  python examples/word_senses.py --model_dir=runs/bert_tiny [--vocab_file=vocab.txt] \
      [--sentences_file=senses.tsv] [--k=3] [--subword_pooling=first|mean] [--no-zscore]
"""

import argparse
import os
import sys
from typing import List, Optional, Sequence, Tuple

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from official.common import quiet  # pylint: disable=g-import-not-at-top,wrong-import-position
quiet.quiet_cli(__name__)  # hides TensorFlow's start-up lines (--verbose keeps them)

from official.nlp.serving import inference  # pylint: disable=wrong-import-position
from official.nlp.tools import embed  # pylint: disable=wrong-import-position
from official.nlp.tools import embedding_stats  # pylint: disable=wrong-import-position

# (word, sense, sentence): words with two senses in code documentation.
SENTENCES = [
    ('return', 'verb', 'Return the number of items in the queue.'),
    ('return', 'verb', 'This method will return a new list in sorted order.'),
    ('return', 'verb', 'Otherwise return True if the path points to an existing file.'),
    ('return', 'verb', 'It should return the value of the named attribute.'),
    ('return', 'noun', 'The return value is None if the call failed.'),
    ('return', 'noun', 'Return values of the callback are ignored.'),
    ('return', 'noun', 'The function ignores the return value of the callback.'),
    ('return', 'noun', 'Check the return status before reading the result.'),
    ('set', 'verb', 'Set the flag to true when the file is closed.'),
    ('set', 'verb', 'You can set the value of the named attribute.'),
    ('set', 'verb', 'This method will set the timeout of the socket.'),
    ('set', 'verb', 'Set the current position in the stream.'),
    ('set', 'type', 'Return a set of the names defined in the module.'),
    ('set', 'type', 'The result is a set of unique keys.'),
    ('set', 'type', 'Add an element to the set if it is not already present.'),
    ('set', 'type', 'Set operations such as union return a new set.'),
    ('copy', 'verb', 'Copy the file to the destination directory.'),
    ('copy', 'verb', 'The function will copy the data from the source stream.'),
    ('copy', 'verb', 'This function will copy the permission bits of the file.'),
    ('copy', 'verb', 'Copy all items of the dictionary into a new one.'),
    ('copy', 'noun', 'Return a shallow copy of the list.'),
    ('copy', 'noun', 'The function returns a deep copy of the object.'),
    ('copy', 'noun', 'A copy of the dictionary is made before it is changed.'),
    ('copy', 'noun', 'Changes to the copy do not affect the original.'),
    ('key', 'mapping', 'Raise KeyError if the key is not in the dictionary.'),
    ('key', 'mapping', 'Return the value for the key if it is in the mapping.'),
    ('key', 'mapping', 'Each key of the dictionary must be hashable.'),
    ('key', 'mapping', 'The items are sorted by key and then by value.'),
    ('key', 'secret', 'The message is signed with the secret key.'),
    ('key', 'secret', 'The private key is used to decrypt the data.'),
    ('key', 'secret', 'Generate a new random key for the cipher.'),
    ('key', 'secret', 'The server sends its public key during the handshake.'),
]


def read_sentences(path: str) -> List[Tuple[str, str, str]]:
  """`(word, sense, sentence)` rows of a tab-separated file (blank lines skipped)."""
  rows = []
  with open(path, encoding='utf-8') as f:
    for number, line in enumerate(f, 1):
      if not line.strip():
        continue
      fields = line.rstrip('\r\n').split('\t')
      if len(fields) != 3:
        raise ValueError(f'--sentences_file={path} line {number}: {len(fields)} fields; expected '
                         'word<TAB>sense<TAB>sentence')
      rows.append((fields[0], fields[1], fields[2]))
  return rows


def occurrence_rows(tokens: embed.TokenEmbeddings, sentences: Sequence[Tuple[str, str, str]]
                    ) -> List[int]:
  """The row of `tokens` holding each sentence's (first) occurrence of its word."""
  rows = []
  for line, (word, _, sentence) in enumerate(sentences):
    found = [i for i in np.flatnonzero(tokens.lines == line)
             if tokens.words[i].lower() == word.lower()]
    if not found:
      raise ValueError(f'the word {word!r} is not a word of sentence {line + 1}: {sentence!r}')
    rows.append(int(found[0]))
  return rows


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--model_dir', required=True,
                      help='A training model_dir or a SavedModel export.')
  parser.add_argument('--vocab_file', default=None,
                      help='Its vocab.txt (default: the one found with the model).')
  parser.add_argument('--sentences_file', default=None,
                      help='word<TAB>sense<TAB>sentence lines (default: built-in sentences).')
  parser.add_argument('--k', type=int, default=3, help='Neighbours listed per occurrence.')
  parser.add_argument('--subword_pooling', choices=embed.SUBWORD_POOLINGS, default='first')
  parser.add_argument('--zscore', action=argparse.BooleanOptionalAction, default=True,
                      help='Standardise with stats fitted on all words of the sentences.')
  args = parser.parse_args(argv)
  if args.k < 1:
    parser.error(f'--k={args.k}: expected at least 1')
  try:
    sentences = read_sentences(args.sentences_file) if args.sentences_file else SENTENCES
    model = inference.load_inference_model(args.model_dir)
    tokens = embed.token_embeddings(model, model.load_tokenizer(args.vocab_file),
                                    [s for _, _, s in sentences], args.subword_pooling)
    rows = np.array(occurrence_rows(tokens, sentences))
  except (ValueError, OSError) as e:
    print(f'word_senses: error: {" ".join(str(e).split())}', file=sys.stderr)
    return 1
  vectors = tokens.vectors
  if args.zscore:  # fitted on every word of the sentences, the ambiguous ones and their contexts
    vectors = embedding_stats.apply_zscore(vectors, embedding_stats.fit_zscore(vectors))

  same = total = 0
  chance = 0.0  # expected hits of a random neighbour: same-sense others / others
  for word in dict.fromkeys(w for w, _, _ in sentences):
    members = [i for i, (w, _, _) in enumerate(sentences) if w == word]
    if len(members) < 2:
      continue
    neighbours, similarities = embed.nearest_neighbours(vectors[rows[members]], args.k)
    print(f'== {word}')
    for member, found, cosines in zip(members, neighbours, similarities):
      _, sense, sentence = sentences[member]
      listed = ' | '.join(f'{sentences[members[j]][1]} {c:.3f}' for j, c in zip(found, cosines))
      print(f'[{sense}] {sentence} -> {listed}')
      same += sentences[members[found[0]]][1] == sense
      total += 1
      chance += (sum(sentences[m][1] == sense for m in members) - 1) / (len(members) - 1)
  print(f'same-sense nearest neighbour: {same / max(total, 1):.3f} ({same} of {total} '
        f'occurrences; chance {chance / max(total, 1):.3f}; '
        f'{"z-scored" if args.zscore else "raw"} {args.subword_pooling} sub-word vectors)')
  return 0


if __name__ == '__main__':
  sys.exit(main())
