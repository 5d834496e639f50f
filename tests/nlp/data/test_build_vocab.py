"""Tests of data_tools/build_vocab.py."""

import random

import pytest
from tokenizers import Tokenizer

from data_tools import build_vocab
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
