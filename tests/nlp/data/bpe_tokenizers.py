"""Small non-WordPiece tokenizers for tests, trained here with `tokenizers` on a generated corpus:
ModernBERT-style byte-level BPE (`[CLS] [SEP] [MASK] [PAD] [UNK]`, a template post-processor),
RoBERTa-style byte-level BPE (`<s> </s> <mask> <pad> <unk>`, `RobertaProcessing`) and a
SentencePiece-style Unigram (`▁` word starts). Each trains in a few milliseconds.

Example:
  >>> lines = corpus_lines(200)
  >>> path = byte_level_bpe(tmp_path / 'tokenizer.json', lines)
"""

import json
import os
import random
from typing import List, Sequence

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import trainers

BERT_SPECIALS = ('[CLS]', '[SEP]', '[MASK]', '[PAD]', '[UNK]')
ROBERTA_SPECIALS = ('<s>', '<pad>', '</s>', '<unk>', '<mask>')
_SYLLABLES = ('ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'pa', 'do', 'gi', 'bu', 'fe')


def corpus_lines(count: int = 300, seed: int = 0) -> List[str]:
  """`count` ASCII sentences of made-up words of 1-4 syllables (so BPE splits many into several
  tokens), with capitals, digits, commas, contractions and a final period."""
  rng = random.Random(seed)
  lines = []
  for _ in range(count):
    words = [''.join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4)))
             for _ in range(rng.randint(4, 12))]
    words[0] = words[0].capitalize()
    if rng.random() < 0.3:
      words.insert(rng.randrange(len(words)), str(rng.randint(0, 2000)))
    if rng.random() < 0.3:
      words[rng.randrange(len(words))] += ','
    if rng.random() < 0.2:
      words[-1] += "'s"
    lines.append(' '.join(words) + '.')
  return lines


def documents_text(lines: Sequence[str], per_document: int = 4) -> str:
  """`lines` as the pretraining input: `per_document` sentences a document, a blank line between."""
  documents = ['\n'.join(lines[i:i + per_document]) for i in range(0, len(lines), per_document)]
  return '\n\n'.join(documents) + '\n'


def _save(tokenizer: Tokenizer, path) -> str:
  path = str(path)
  os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
  tokenizer.save(path)
  return path


def byte_level_bpe(path, lines: Sequence[str], specials: Sequence[str] = BERT_SPECIALS,
                   vocab_size: int = 400, add_prefix_space: bool = False,
                   post_processor: str = 'template') -> str:
  """Trains a GPT-2-style byte-level BPE on `lines` and saves it as `path` (a tokenizer.json).

  Args:
    specials: the special tokens, ids 0, 1, ... in this order.
    post_processor: 'template' (`specials[0] $A specials[1]`, ModernBERT's), 'roberta'
      (`RobertaProcessing` of `<s>` / `</s>`) or 'none'.
  """
  tokenizer = Tokenizer(models.BPE(unk_token=None))
  tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
  tokenizer.decoder = decoders.ByteLevel()
  tokenizer.train_from_iterator(lines, trainers.BpeTrainer(
      vocab_size=vocab_size, special_tokens=list(specials), show_progress=False,
      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
  if post_processor == 'template':
    cls, sep = specials[0], specials[1]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f'{cls} $A {sep}', pair=f'{cls} $A {sep} $B:1 {sep}:1',
        special_tokens=[(cls, tokenizer.token_to_id(cls)), (sep, tokenizer.token_to_id(sep))])
  elif post_processor == 'roberta':
    tokenizer.post_processor = processors.RobertaProcessing(
        ('</s>', tokenizer.token_to_id('</s>')), ('<s>', tokenizer.token_to_id('<s>')))
  return _save(tokenizer, path)


def unigram(path, lines: Sequence[str], vocab_size: int = 300) -> str:
  """Trains a SentencePiece-style Unigram (NFKC, Metaspace `▁`, RoBERTa's special tokens)."""
  tokenizer = Tokenizer(models.Unigram())
  tokenizer.normalizer = normalizers.NFKC()
  tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
  tokenizer.decoder = decoders.Metaspace()
  tokenizer.train_from_iterator(lines, trainers.UnigramTrainer(
      vocab_size=vocab_size, special_tokens=list(ROBERTA_SPECIALS), unk_token='<unk>',
      show_progress=False))
  tokenizer.post_processor = processors.RobertaProcessing(
      ('</s>', tokenizer.token_to_id('</s>')), ('<s>', tokenizer.token_to_id('<s>')))
  return _save(tokenizer, path)


def without_token(path, token: str, out_path) -> str:
  """A copy of the tokenizer.json `path` in which `token` is an ordinary word, not an added token
  (its id stays in the model's vocabulary under another name)."""
  with open(str(path), encoding='utf-8') as f:
    spec = json.load(f)
  spec['added_tokens'] = [t for t in spec['added_tokens'] if t['content'] != token]
  vocab = spec['model']['vocab']
  renamed = f'renamed{token}'.replace('[', '').replace(']', '').replace('<', '').replace('>', '')
  spec['model']['vocab'] = {(renamed if t == token else t): i for t, i in vocab.items()}
  with open(str(out_path), 'w', encoding='utf-8') as f:
    json.dump(spec, f)
  return str(out_path)
