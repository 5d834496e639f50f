"""Tests of data_tools/build_vocab.py."""

import random

import pytest
from tokenizers import Tokenizer

from data_tools import build_vocab
from official.nlp.data import vocab_builder
from official.nlp.data.tokenization import SPECIAL_TOKENS, WordPieceTokenizer

WORDS = ["token", "tokens", "tokenizer", "masked", "masking", "language", "model", "models",
         "pretraining", "sentence", "sentences", "document", "vocabulary", "the", "a", "of", "and",
         "is", "Über", "café"]


@pytest.fixture()
def corpus(tmp_path):
  rng = random.Random(0)
  lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) + "." for _ in range(400)]
  path = tmp_path / "corpus.txt"
  path.write_bytes(("\n".join(lines[:200]) + "\n\n").encode() + b"bad \xff line\n" +
                   ("\n".join(lines[200:]) + "\n").encode())
  return path


def test_vocab_loads_in_ours_and_tokenizers_alike(corpus, tmp_path):
  paths = build_vocab.build_vocab(str(corpus), str(tmp_path / "vocab"), vocab_size=120,
                                  min_frequency=1)
  vocab = (tmp_path / "vocab" / "vocab.txt").read_text(encoding="utf-8").splitlines()
  assert vocab[:5] == list(SPECIAL_TOKENS)
  assert 60 <= len(vocab) <= 120 and len(set(vocab)) == len(vocab)
  assert any(t.startswith("##") for t in vocab)
  ours = WordPieceTokenizer.from_vocab_file(paths["vocab_file"])
  from_json = WordPieceTokenizer.from_tokenizer_json(paths["tokenizer_json"])
  hf = Tokenizer.from_file(paths["tokenizer_json"])
  sentence = "The Tokenizer masks a CAFÉ sentence of unseen wordz."
  expected = hf.encode(sentence, add_special_tokens=False)
  assert ours.tokenize(sentence) == expected.tokens == from_json.tokenize(sentence)
  assert ours.encode_batch([sentence])[0] == expected.ids
  # lower + accents
  assert "café" not in expected.tokens and "cafe" in "".join(expected.tokens).replace("##", "")
  assert from_json.vocab == ours.vocab and from_json.do_lower_case is True


def test_cased_vocab_and_cli(corpus, tmp_path, capsys):
  code = build_vocab.main(["prog", f"--input_file={corpus}", f"--output_dir={tmp_path / 'cased'}",
                           "--vocab_size=150", "--min_frequency=1", "--nodo_lower_case"])
  assert code == 0
  assert "vocab.txt" in capsys.readouterr().out
  tokenizer = WordPieceTokenizer.from_tokenizer_json(str(tmp_path / "cased" / "tokenizer.json"))
  assert tokenizer.do_lower_case is False
  assert "Über" in "".join(tokenizer.tokenize("Über")).replace("##", "")


def test_bad_input_is_reported(tmp_path, capsys):
  assert build_vocab.main(["prog", f"--input_file={tmp_path / 'none.txt'}",
                          f"--output_dir={tmp_path}"]) == 1
  assert "none.txt" in capsys.readouterr().err
  with pytest.raises(ValueError, match="vocab_size"):
    build_vocab.build_vocab(str(tmp_path / "none.txt"), str(tmp_path), vocab_size=3)


def test_a_sample_is_whole_lines_from_seeded_places_in_proportion_to_size(tmp_path):
  big, small = tmp_path / 'big.txt', tmp_path / 'small.txt'
  big.write_text(''.join(f'line {i} of the big file\n' for i in range(4000)), encoding='utf-8')
  small.write_text('one short line\nand another\n', encoding='utf-8')
  files = [str(big), str(small)]
  lines_of = {p: set(open(p, encoding='utf-8').read().splitlines()) for p in files}
  sample = lambda seed: [line for batch in vocab_builder._sampled_batches(  # pylint: disable=protected-access
      files, 10_000, seed, block_bytes=1_000) for line in batch]
  first = sample(0)
  # Whole lines only, from both files; the small file (below its share) read whole.
  assert set(first) <= lines_of[files[0]] | lines_of[files[1]]
  assert lines_of[files[1]] <= set(first)
  # About 10,000 bytes: 10 blocks of 1,000 bytes, less the partial lines cut at their ends.
  taken = sum(len(line) + 1 for line in first if line in lines_of[files[0]])
  assert 10 * (1_000 - 2 * 30) <= taken <= 10_000
  assert sample(0) == first and sample(1) != first


def test_build_vocab_on_a_sample(corpus, tmp_path):
  paths = vocab_builder.build_vocab(str(corpus), str(tmp_path / 'v'), vocab_size=120,
                                    sample_bytes=2_000)
  vocab = open(paths['vocab_file'], encoding='utf-8').read().split()
  assert vocab[:len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS) and len(vocab) > len(SPECIAL_TOKENS)
  with pytest.raises(ValueError, match=r'sample_bytes must be >= 1 .*found 0'):
    vocab_builder.build_vocab(str(corpus), str(tmp_path / 'w'), sample_bytes=0)
