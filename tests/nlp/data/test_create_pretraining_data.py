"""Tests of official/nlp/data/create_pretraining_data.py (and its helper modules) and data_tools'
CLI."""

import dataclasses
import logging
import os
import random

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data import create_pretraining_data as cpd
from official.nlp.data import data_metadata
from official.nlp.data import pretraining_instances as pi
from official.nlp.data import tfrecord_writer
from official.nlp.data.tokenization import WordPieceTokenizer, load_tokenizer
from data_tools import create_pretraining_data as cli

NUM_WORDS, NUM_DOCS = 120, 60
SUFFIXES = ("ing", "ed", "s")
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB = (SPECIALS + ["."] + [f"w{i}" for i in range(NUM_WORDS)]
         + [f"doc{i}" for i in range(NUM_DOCS)] + ["##" + s for s in SUFFIXES])
TOKEN_ID = {t: i for i, t in enumerate(VOCAB)}
CLS, SEP, MASK = TOKEN_ID["[CLS]"], TOKEN_ID["[SEP]"], TOKEN_ID["[MASK]"]
CONTINUATION = np.array([t.startswith("##") for t in VOCAB])
DOC_TOKEN = {TOKEN_ID[f"doc{i}"]: i for i in range(NUM_DOCS)}
SEQ, MAX_PRED = 128, 20


def _corpus_text(seed: int = 0, num_docs: int = NUM_DOCS) -> str:
  """Documents of 4-12 sentences; every sentence starts with its document's token `docN`; 30% of
  words carry a suffix that WordPiece splits off (`w5ing` -> `w5 ##ing`)."""
  rng = random.Random(seed)
  documents = []
  for d in range(num_docs):
    sentences = []
    for _ in range(rng.randint(4, 12)):
      words = [f"w{rng.randrange(NUM_WORDS)}" + (rng.choice(SUFFIXES) if rng.random() < 0.3 else "")
               for _ in range(rng.randint(5, 14))]
      sentences.append(f"Doc{d} " + " ".join(words) + ".")
    documents.append("\n".join(sentences))
  return "\n\n".join(documents) + "\n"


def corpus_dir(tmp_path_factory, name: str, num_docs: int = NUM_DOCS):
  """A folder with `corpus.txt` (`_corpus_text`) and `vocab.txt` (VOCAB), for module fixtures."""
  root = tmp_path_factory.mktemp(name)
  (root / "corpus.txt").write_text(_corpus_text(num_docs=num_docs), encoding="utf-8")
  (root / "vocab.txt").write_text("".join(t + "\n" for t in VOCAB), encoding="utf-8")
  return root


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
  root = tmp_path_factory.mktemp("cpd")
  (root / "corpus.txt").write_text(_corpus_text(), encoding="utf-8")
  (root / "vocab.txt").write_text("".join(t + "\n" for t in VOCAB), encoding="utf-8")
  return root


def _run(data_dir, out_name, **kwargs):
  options = dict(dupe_factor=5, max_seq_length=SEQ, max_predictions_per_seq=MAX_PRED, num_workers=1)
  options.update(kwargs)
  output = str(data_dir / out_name)
  metadata = cpd.create_pretraining_data(str(data_dir / "corpus.txt"), output,
                                         str(data_dir / "vocab.txt"), **options)
  return output, metadata


_KIND_DTYPES = {"int64_list": np.int64, "float_list": np.float32, "bytes_list": object}


def _read(path, compression=None):
  """Records as dicts of numpy arrays, parsed by TensorFlow's own protobuf."""
  records = []
  for raw in tf.data.TFRecordDataset(path, compression_type=compression):
    example = tf.train.Example.FromString(raw.numpy())
    row = {}
    for name, feature in example.features.feature.items():
      kind = feature.WhichOneof("kind")
      # The dtype of the record format (float_list holds float32), whatever protobuf's
      # containers convert to.
      row[name] = np.array(getattr(feature, kind).value, _KIND_DTYPES[kind])
    records.append(row)
  return records


def _originals(record):
  """input_ids with the masked positions restored to their labels."""
  ids = record["input_ids"].copy()
  count = int(record["masked_lm_weights"].sum())
  ids[record["masked_lm_positions"][:count]] = record["masked_lm_ids"][:count]
  return ids


@pytest.fixture(scope="module")
def plain(data_dir):
  path, metadata = _run(data_dir, "plain.tfrecord")
  return _read(path), metadata


@pytest.fixture(scope="module")
def whole_word(data_dir):
  path, metadata = _run(data_dir, "wwm.tfrecord", do_whole_word_mask=True)
  return _read(path), metadata


# ------------------------------------------------------------------------------------- tokenizer


def test_tokenizer_from_vocab_and_json_agree(data_dir, tmp_path):
  tokenizer = WordPieceTokenizer.from_vocab_file(str(data_dir / "vocab.txt"))
  assert tokenizer.tokenize("Doc3 W5ing w7.") == ["doc3", "w5", "##ing", "w7", "."]
  assert tokenizer.convert_tokens_to_ids(["w5", "##ing"]) == [TOKEN_ID["w5"], TOKEN_ID["##ing"]]
  tokenizer.backend.save(str(tmp_path / "tokenizer.json"))
  from_json = WordPieceTokenizer.from_tokenizer_json(str(tmp_path / "tokenizer.json"))
  assert from_json.vocab == VOCAB and from_json.do_lower_case is True
  lines = ["Doc1 w1 w2s.", "", "w9ed  w3", "zzz"]
  assert from_json.encode_batch(lines) == tokenizer.encode_batch(lines)
  assert from_json.vocab_sha256() == tokenizer.vocab_sha256()


def test_tokenizer_ascii_fast_path_matches_rust(tmp_path):
  vocab = (SPECIALS + list("abcdefghijklmnopqrstuvwxyz0123456789.,!?$_-'\"")
           + ["##" + c for c in "abcdefghij"] + ["hello", "world", "##ing", "##s", "the"])
  (tmp_path / "v.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
  tokenizer = WordPieceTokenizer.from_vocab_file(str(tmp_path / "v.txt"))
  rng = random.Random(1)
  alphabet = "abcdefghij hello world HELLO, The! $5_3 -'\"\t"
  lines = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(300)]
  lines += ["héllo wörld", "ctrl\x0bchar", "a [MASK] b", "x" * 150, "del\x7f", "中文 hello", ""]
  ids, lengths = tokenizer.encode_to_arrays(lines)
  expected = tokenizer.encode_batch(lines)
  assert lengths.tolist() == [len(e) for e in expected]
  assert ids.tolist() == [i for e in expected for i in e]


def test_vocab_without_mask_token_names_file_and_tokens(tmp_path):
  path = tmp_path / "bad_vocab.txt"
  path.write_text("[PAD]\n[UNK]\n[CLS]\nhello\n", encoding="utf-8")
  with pytest.raises(ValueError, match=r"bad_vocab\.txt.*\[SEP\], \[MASK\]"):
    WordPieceTokenizer.from_vocab_file(str(path))
  with pytest.raises(FileNotFoundError, match="missing.txt"):
    load_tokenizer(str(tmp_path / "missing.txt"))


# ------------------------------------------------------------------------------------- schema


def test_schema_matches_google_bert(data_dir, plain):
  records, _ = plain
  path = str(data_dir / "plain.tfrecord")
  spec = {"input_ids": tf.io.FixedLenFeature([SEQ], tf.int64),
          "input_mask": tf.io.FixedLenFeature([SEQ], tf.int64),
          "segment_ids": tf.io.FixedLenFeature([SEQ], tf.int64),
          "masked_lm_positions": tf.io.FixedLenFeature([MAX_PRED], tf.int64),
          "masked_lm_ids": tf.io.FixedLenFeature([MAX_PRED], tf.int64),
          "masked_lm_weights": tf.io.FixedLenFeature([MAX_PRED], tf.float32),
          "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64)}
  parsed = list(tf.data.TFRecordDataset(path)
                .map(lambda r: tf.io.parse_single_example(r, spec)).take(5))
  assert len(parsed) == 5
  assert set(records[0]) == set(spec)


def test_cls_sep_segments_and_padding(plain):
  records, _ = plain
  for record in records:
    ids, mask, segments = _originals(record), record["input_mask"], record["segment_ids"]
    length = int(mask.sum())
    assert mask[:length].all() and not mask[length:].any()
    assert not ids[length:].any() and not segments[length:].any()
    assert ids[0] == CLS and ids[length - 1] == SEP
    seps = np.nonzero(ids[:length] == SEP)[0]
    assert len(seps) == 2
    first_sep = seps[0]
    assert not segments[:first_sep + 1].any() and segments[first_sep + 1:length].all()
    assert length <= SEQ


def test_masked_positions_unique_sorted_and_never_special(plain, whole_word):
  for records in (plain[0], whole_word[0]):
    for record in records:
      count = int(record["masked_lm_weights"].sum())
      positions = record["masked_lm_positions"][:count]
      assert count >= 1
      assert (np.diff(positions) > 0).all()
      assert (not record["masked_lm_positions"][count:].any()
              and not record["masked_lm_ids"][count:].any())
      original = _originals(record)
      assert not np.isin(original[positions], [CLS, SEP]).any()
      assert (positions < record["input_mask"].sum()).all()


def _action_rates(records):
  masked = kept = total = 0
  for record in records:
    count = int(record["masked_lm_weights"].sum())
    positions, labels = record["masked_lm_positions"][:count], record["masked_lm_ids"][:count]
    now = record["input_ids"][positions]
    masked += int((now == MASK).sum())
    kept += int((now == labels).sum())
    total += count
  return masked / total, kept / total, (total - masked - kept) / total


def test_mask_rate_and_80_10_10(plain):
  records, metadata = plain
  budgets = pi.num_predictions(np.array([r["input_mask"].sum() for r in records]), 0.15, MAX_PRED)
  counts = np.array([r["masked_lm_weights"].sum() for r in records])
  np.testing.assert_array_equal(counts, budgets)  # without whole words the budget is always met
  tokens = sum(int(r["input_mask"].sum()) for r in records)
  assert abs(counts.sum() / tokens - 0.15) < 0.01
  mask_rate, keep_rate, random_rate = _action_rates(records)
  assert (abs(mask_rate - 0.8) < 0.02 and abs(keep_rate - 0.1) < 0.02
          and abs(random_rate - 0.1) < 0.02)
  assert metadata["num_masked_tokens"] == counts.sum() and metadata["num_instances"] == len(records)


def test_whole_word_groups_masked_together_with_one_decision(whole_word):
  records, _ = whole_word
  counts = sum(r["masked_lm_weights"].sum() for r in records)
  tokens = sum(r["input_mask"].sum() for r in records)
  assert abs(counts / tokens - 0.15) < 0.01
  words = mixed = 0
  for record in records:
    original = _originals(record)
    length = int(record["input_mask"].sum())
    selected = np.zeros(SEQ, bool)
    count = int(record["masked_lm_weights"].sum())
    selected[record["masked_lm_positions"][:count]] = True
    # Word groups: a start token followed by its ## continuations.
    start = 1
    for position in range(2, length + 1):
      if position == length or not CONTINUATION[original[position]]:
        group = np.arange(start, position)
        if original[start] not in (CLS, SEP):
          assert selected[group].all() or not selected[group].any(), "word partly masked"
          if selected[group].all() and group.size > 1:
            words += 1
            is_mask = record["input_ids"][group] == MASK
            mixed += bool(is_mask.any() and not is_mask.all())
        start = position
  assert words > 100
  assert mixed / words < 0.02  # only a random replacement that happens to draw [MASK]
  mask_rate, keep_rate, random_rate = _action_rates(records)
  assert (abs(mask_rate - 0.8) < 0.03 and abs(keep_rate - 0.1) < 0.03
          and abs(random_rate - 0.1) < 0.03)


def test_next_sentence_labels_and_segment_sources(data_dir):
  path, metadata = _run(data_dir, "dynamic.tfrecord", dynamic=True)
  records = _read(path)
  assert set(records[0]) == {"input_ids", "input_mask", "segment_ids", "next_sentence_labels"}
  assert metadata["dynamic"] and metadata["feature_names"] == cpd.feature_names(dynamic=True)
  labels = np.array([r["next_sentence_labels"][0] for r in records])
  assert 0.4 < labels.mean() < 0.65
  checked = 0
  for record, label in zip(records, labels):
    ids, segments = record["input_ids"], record["segment_ids"]
    length = int(record["input_mask"].sum())
    docs_a = {DOC_TOKEN[i] for i in ids[:length][segments[:length] == 0] if i in DOC_TOKEN}
    docs_b = {DOC_TOKEN[i] for i in ids[:length][segments[:length] == 1] if i in DOC_TOKEN}
    assert len(docs_a) <= 1 and len(docs_b) <= 1
    if docs_a and docs_b:
      checked += 1
      assert (docs_a == docs_b) == (label == 0)
  assert checked > 100


def test_no_next_sentence_single_segments(data_dir):
  path, metadata = _run(data_dir, "single.tfrecord", no_next_sentence=True, short_seq_prob=0.0)
  records = _read(path)
  assert not metadata["next_sentence"]
  lengths = []
  for record in records:
    ids = _originals(record)
    length = int(record["input_mask"].sum())
    lengths.append(length)
    assert ids[0] == CLS and ids[length - 1] == SEP and (ids[1:length - 1] != SEP).all()
    assert not record["segment_ids"].any() and record["next_sentence_labels"][0] == 0
  # Segments are cut at sentence boundaries within a document: most are long, none exceeds the
  # length.
  assert max(lengths) <= SEQ and np.mean(lengths) > 60


def test_high_mask_rate(data_dir):
  path, _ = _run(data_dir, "p40.tfrecord", masked_lm_prob=0.4, max_predictions_per_seq=52,
                 dupe_factor=1)
  records = _read(path)
  counts = sum(r["masked_lm_weights"].sum() for r in records)
  tokens = sum(r["input_mask"].sum() for r in records)
  assert abs(counts / tokens - 0.4) < 0.01


def test_ngram_masking_deterministic_and_spans(data_dir):
  first, _ = _run(data_dir, "ngram_a.tfrecord", max_ngram_size=3, dupe_factor=2)
  second, _ = _run(data_dir, "ngram_b.tfrecord", max_ngram_size=3, dupe_factor=2)
  other, _ = _run(data_dir, "ngram_c.tfrecord", max_ngram_size=3, dupe_factor=2, random_seed=7)
  assert open(first, "rb").read() == open(second, "rb").read()
  assert open(first, "rb").read() != open(other, "rb").read()
  runs = []
  for record in _read(first):
    count = int(record["masked_lm_weights"].sum())
    positions = record["masked_lm_positions"][:count]
    assert len(set(positions.tolist())) == count
    runs.append(np.mean(np.diff(positions) == 1) if count > 1 else 0.0)
  single, _ = _run(data_dir, "ngram_1.tfrecord", dupe_factor=2)
  single_runs = [np.mean(np.diff(r["masked_lm_positions"][:int(r["masked_lm_weights"].sum())]) == 1)
                 for r in _read(single)]
  assert np.mean(runs) > np.mean(single_runs) + 0.1  # n-grams make adjacent masked positions common


def test_same_records_with_one_or_two_workers(data_dir, monkeypatch):
  monkeypatch.setattr(cpd, "_CHUNK_TOKENS", 400)  # several work units per dupe
  # Two workers write each shard in parts (`pretraining_units.write_in_parts`), however small.
  monkeypatch.setattr(cpd.pretraining_units, "PARALLEL_WRITE_MIN_RECORDS", 1)
  one, _ = _run(data_dir, "w1.tfrecord", num_workers=1, num_output_shards=2,
                do_whole_word_mask=True)
  two, _ = _run(data_dir, "w2.tfrecord", num_workers=2, num_output_shards=2,
                do_whole_word_mask=True)
  for shard in range(2):
    suffix = f"-{shard:05d}-of-00002"
    assert open(one + suffix, "rb").read() == open(two + suffix, "rb").read()
  assert os.path.getsize(one + "-00000-of-00002") > 0
  # The metadata's sizes and CRC-32s are the files' (the parts' CRCs combined).
  data_metadata.verify_record_files([two + "-00000-of-00002", two + "-00001-of-00002"],
                                    checksum=True)


def test_gzip_and_v2_names(data_dir, plain):
  path, metadata = _run(data_dir, "v2.tfrecord.gz", gzip_compress=True, use_v2_feature_names=True)
  assert metadata["compression"] == "GZIP"
  with open(path, "rb") as f:
    assert f.read(2) == b"\x1f\x8b"
  records = _read(path, "GZIP")
  assert set(records[0]) == {"input_word_ids", "input_mask", "input_type_ids",
                             "masked_lm_positions", "masked_lm_ids", "masked_lm_weights",
                             "next_sentence_labels"}
  reference = plain[0]
  assert len(records) == len(reference)
  np.testing.assert_array_equal(records[0]["input_word_ids"], reference[0]["input_ids"])
  assert data_metadata.metadata_path(path) == str(data_dir / "v2.metadata.json")


def test_metadata_content_and_loader(data_dir, plain):
  _, returned = plain
  meta = data_metadata.load_metadata(str(data_dir / "plain.tfrecord*"))
  assert meta["metadata_path"] == str(data_dir / "plain.metadata.json")
  tokenizer = WordPieceTokenizer.from_vocab_file(str(data_dir / "vocab.txt"))
  expected = {"max_seq_length": SEQ, "max_predictions_per_seq": MAX_PRED, "vocab_size": len(VOCAB),
              "vocab_sha256": tokenizer.vocab_sha256(), "do_lower_case": True, "dupe_factor": 5,
              "random_seed": 12345, "masked_lm_prob": 0.15, "do_whole_word_mask": False,
              "max_ngram_size": None, "next_sentence": True, "dynamic": False, "compression": "",
              "feature_names": ["input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                                "masked_lm_ids", "masked_lm_weights", "next_sentence_labels"],
              "num_instances": len(plain[0]), "files": ["plain.tfrecord"],
              "special_token_ids": {t: TOKEN_ID[t] for t in SPECIALS}}
  for key, value in expected.items():
    assert meta[key] == value, key
  assert meta["num_tokens"] == sum(int(r["input_mask"].sum()) for r in plain[0])
  assert meta["tool_version"] and meta["format"] == data_metadata.FORMAT
  assert returned["num_instances"] == meta["num_instances"]
  assert data_metadata.load_metadata(str(data_dir / "nothing_here.tfrecord")) is None


def test_load_metadata_rejects_disagreeing_files(tmp_path):
  for name, seq in (("a", 128), ("b", 512)):
    data_metadata.write_metadata(str(tmp_path / f"{name}.metadata.json"),
                                 {"format": data_metadata.FORMAT, "max_seq_length": seq})
    (tmp_path / f"{name}.tfrecord").write_bytes(b"")
  with pytest.raises(ValueError, match="max_seq_length: 128.*512"):
    data_metadata.load_metadata(str(tmp_path / "*.tfrecord"))


def test_empty_input_fails_with_reason(tmp_path, data_dir):
  (tmp_path / "blank.txt").write_text("\n\n   \n\n", encoding="utf-8")
  with pytest.raises(ValueError, match=r"no instances.*4 blank"):
    cpd.create_pretraining_data(str(tmp_path / "blank.txt"), str(tmp_path / "o.tfrecord"),
                                str(data_dir / "vocab.txt"), num_workers=1)
  assert not os.path.exists(tmp_path / "o.tfrecord")
  with pytest.raises(FileNotFoundError, match="nope"):
    cpd.create_pretraining_data(str(tmp_path / "nope*.txt"), str(tmp_path / "o.tfrecord"),
                                str(data_dir / "vocab.txt"), num_workers=1)


def test_invalid_utf8_line_reported_and_skipped(tmp_path, data_dir, caplog):
  text = _corpus_text(num_docs=4).encode("utf-8").split(b"\n")
  text[2] = b"Doc0 w1 \xff\xfe w2."
  path = tmp_path / "bad.txt"
  path.write_bytes(b"\n".join(text))
  with caplog.at_level(logging.WARNING):
    metadata = cpd.create_pretraining_data(str(path), str(tmp_path / "o.tfrecord"),
                                           str(data_dir / "vocab.txt"), num_workers=1,
                                           dupe_factor=1)
  assert f"{path}:3: invalid UTF-8" in caplog.text
  assert metadata["num_invalid_lines"] == 1 and metadata["num_instances"] > 0


def test_interrupted_write_leaves_no_shard(tmp_path, data_dir, monkeypatch):
  real_write = tfrecord_writer.AtomicRecordFile.write

  def write_half_then_stop(self, data):
    real_write(self, bytes(data)[:len(data) // 2])
    raise KeyboardInterrupt

  def write_lines_half_then_stop(self, pieces):
    write_half_then_stop(self, b"".join(pieces))

  monkeypatch.setattr(tfrecord_writer.AtomicRecordFile, "write", write_half_then_stop)
  monkeypatch.setattr(tfrecord_writer.AtomicRecordFile, "writelines", write_lines_half_then_stop)
  output = tmp_path / "out.tfrecord"
  with pytest.raises(KeyboardInterrupt):
    cpd.create_pretraining_data(str(data_dir / "corpus.txt"), str(output),
                                str(data_dir / "vocab.txt"), num_workers=1, dupe_factor=1)
  assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------------------------- writer


def test_tfrecord_writer_crc_and_negative_values(tmp_path):
  assert tfrecord_writer.crc32c(b"123456789") == 0xE3069283
  ints = {"a": np.array([[0, 1, 127, 128, 300, 2**40, -1]]), "b": np.array([[5]])}
  floats = {"f": np.array([[0.5, -2.25]], np.float32)}
  data, lengths = tfrecord_writer.encode_examples(ints, floats)
  example = tf.train.Example.FromString(tfrecord_writer.split_records(data, lengths)[0])
  assert list(example.features.feature["a"].int64_list.value) == ints["a"][0].tolist()
  assert list(example.features.feature["f"].float_list.value) == [0.5, -2.25]
  framed, _ = tfrecord_writer.frame_records(data, lengths)
  with tfrecord_writer.AtomicRecordFile(str(tmp_path / "x.tfrecord")) as f:
    f.write(framed)
  assert len(_read(str(tmp_path / "x.tfrecord"))) == 1


def _reference_example(ids, length, segment_start, label, positions=None, masked_ids=None, count=0,
                       v2=False) -> bytes:
  """The same record built with TensorFlow's own protobuf classes."""
  seq = ids.size
  col = np.arange(seq)
  ints = {"input_word_ids" if v2 else "input_ids": ids, "input_mask": (col < length).astype(int),
          "input_type_ids" if v2 else "segment_ids":
              ((col >= segment_start) & (col < length)).astype(int),
          "next_sentence_labels": [label]}
  feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=[int(x) for x in v]))
             for k, v in ints.items()}
  if positions is not None:
    feature["masked_lm_positions"] = tf.train.Feature(
        int64_list=tf.train.Int64List(value=positions.tolist()))
    feature["masked_lm_ids"] = tf.train.Feature(
        int64_list=tf.train.Int64List(value=masked_ids.tolist()))
    weights = [1.0] * count + [0.0] * (positions.size - count)
    feature["masked_lm_weights"] = tf.train.Feature(float_list=tf.train.FloatList(value=weights))
  return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _random_pretraining_batch(rng, batch, seq, max_pred, vocab_size):
  lengths = rng.integers(3, seq + 1, batch)
  segment_starts = np.minimum(rng.integers(2, seq + 1, batch), lengths)
  ids = rng.integers(0, vocab_size, (batch, seq))
  ids[np.arange(seq)[None] >= lengths[:, None]] = 0
  counts = rng.integers(1, max_pred + 1, batch)
  padding = np.arange(max_pred)[None] >= counts[:, None]
  positions = np.sort(rng.integers(0, seq, (batch, max_pred)), axis=1)
  masked_ids = rng.integers(0, vocab_size, (batch, max_pred))
  positions[padding] = 0
  masked_ids[padding] = 0
  return ids, lengths, segment_starts, rng.integers(0, 2, batch), positions, masked_ids, counts


@pytest.mark.parametrize("seq,vocab_size,dynamic,v2,gzip", [
    (128, 8000, False, False, False),    # the usual case: 1-2 byte ids, 1-byte positions
    (200, 40000, False, True, True),     # 3-byte ids, 2-byte positions, v2 names, GZIP
    (16, 50, True, False, False),        # dynamic records: no masked-LM features
])
def test_pretraining_record_encoder_matches_tensorflow(tmp_path, seq, vocab_size, dynamic, v2,
                                                       gzip):
  rng = np.random.default_rng(seq)
  ids, lengths, segment_starts, labels, positions, masked_ids, counts = _random_pretraining_batch(
      rng, 40, seq, 7, vocab_size)
  lengths[0], segment_starts[0] = seq, seq  # full length, single segment
  masked = (None, None, None) if dynamic else (positions, masked_ids, counts)
  framed, framed_lengths = tfrecord_writer.encode_pretraining_records(
      ids, lengths, segment_starts, labels, *masked, use_v2_feature_names=v2, vocab_size=vocab_size)
  assert framed.size == framed_lengths.sum()
  path = str(tmp_path / "r.tfrecord")
  with tfrecord_writer.AtomicRecordFile(path, gzip_compress=gzip) as f:
    f.write(framed.tobytes())
  raw = [r.numpy()
         for r in tf.data.TFRecordDataset(path, compression_type="GZIP" if gzip else None)]
  assert len(raw) == 40
  names = cpd.feature_names(v2, dynamic)
  spec = {name: tf.io.FixedLenFeature([1 if name == "next_sentence_labels" else
                                       7 if name.startswith("masked") else seq],
                                      tf.float32 if name == "masked_lm_weights" else tf.int64)
          for name in names}
  for row, record in enumerate(raw):
    reference = _reference_example(ids[row], lengths[row], segment_starts[row], labels[row],
                                   None if dynamic else positions[row],
                                   None if dynamic else masked_ids[row],
                                   0 if dynamic else counts[row], v2)
    ours, theirs = (tf.io.parse_single_example(record, spec),
                    tf.io.parse_single_example(reference, spec))
    assert set(ours) == set(names)
    for name in names:
      np.testing.assert_array_equal(ours[name].numpy(), theirs[name].numpy(), err_msg=name)
    assert tf.train.Example.FromString(record) == tf.train.Example.FromString(reference)


def test_pretraining_record_crc_is_checked_by_tensorflow(tmp_path):
  rng = np.random.default_rng(0)
  ids, lengths, segment_starts, labels, positions, masked_ids, counts = _random_pretraining_batch(
      rng, 3, 32, 5, 300)
  framed, framed_lengths = tfrecord_writer.encode_pretraining_records(
      ids, lengths, segment_starts, labels, positions, masked_ids, counts)
  records = tfrecord_writer.split_records(framed, framed_lengths)
  for record in records:  # both CRCs equal the generic (byte-at-a-time) implementation's
    length = int.from_bytes(record[:8], "little")
    assert int.from_bytes(record[8:12], "little") == int(tfrecord_writer._masked(np.array(
        [tfrecord_writer.crc32c(record[:8])]))[0])
    assert int.from_bytes(record[-4:], "little") == int(tfrecord_writer._masked(np.array(
        [tfrecord_writer.crc32c(record[12:12 + length])]))[0])
  corrupt = bytearray(b"".join(records))
  corrupt[len(records[0]) - 1] ^= 1  # the first record's data CRC
  (tmp_path / "bad.tfrecord").write_bytes(bytes(corrupt))
  with pytest.raises(tf.errors.DataLossError):
    list(tf.data.TFRecordDataset(str(tmp_path / "bad.tfrecord")))


def test_instance_arrays_greedy_budget_and_word_units():
  """Ragged masking: budgets met exactly per token, greedily per word, [CLS]/[SEP] never
  selected."""
  rng = np.random.default_rng(5)
  vocab_size = 40
  continuation = np.zeros(vocab_size, bool)
  continuation[30:] = True
  token_ids = rng.integers(5, 30, 5000).astype(np.uint16)
  pieces = rng.random(5000) < 0.3
  token_ids[pieces] = rng.integers(30, vocab_size, int(pieces.sum()))  # "##" pieces
  sentence_starts = np.arange(0, 5001, 25)
  document_starts = np.arange(0, sentence_starts.size, 8)
  document_starts[-1] = sentence_starts.size - 1
  special = pi.SpecialIds(2, 3, 4, vocab_size, continuation)
  for whole_word in (False, True):
    options = pi.InstanceOptions(64, 12, 0.15, 0.1, whole_word)
    packed = pi.pack_documents(np.arange(document_starts.size - 1), sentence_starts,
                               document_starts, 64, 0.1, rng)
    arrays = pi.build_instance_arrays(token_ids, packed, options, special, np.random.default_rng(1))
    budgets = pi.num_predictions(arrays.lengths, 0.15, 12)
    for row in range(len(arrays)):
      count = int(arrays.masked_counts[row])
      positions = arrays.masked_lm_positions[row, :count]
      original = arrays.input_ids[row].copy()
      original[positions] = arrays.masked_lm_ids[row, :count]
      length = int(arrays.lengths[row])
      assert (original[0] == 2 and original[length - 1] == 3
              and not arrays.input_ids[row, length:].any())
      assert not np.isin(original[positions], [2, 3]).any() and (np.diff(positions) > 0).all()
      if not whole_word:
        assert count == budgets[row]
        continue
      # Words: a start and its continuations; a word is masked whole or not at all, and no unmasked
      # word fits in the budget left (the greedy fill is maximal).
      selected = np.zeros(length, bool)
      selected[positions] = True
      remaining = budgets[row] - count
      start = 1
      for position in range(2, length + 1):
        if (position == length or not continuation[original[position]]
            or original[position - 1] in (2, 3)):
          if original[start] not in (2, 3):
            group = selected[start:position]
            assert group.all() or not group.any()
            assert group.any() or position - start > remaining
          start = position
    assert arrays.masked_counts.sum() / arrays.lengths.sum() == pytest.approx(0.15, abs=0.02)


# ------------------------------------------------------------------------------------- MG API


def test_model_garden_api_round_trip(data_dir, tmp_path):
  tokenizer = WordPieceTokenizer.from_vocab_file(str(data_dir / "vocab.txt"))
  rng = random.Random(3)
  instances = cpd.create_training_instances([str(data_dir / "corpus.txt")], tokenizer, None, 64, 2,
                                            0.1, 0.15, 10, rng, do_whole_word_mask=True)
  assert len(instances) > 50
  for instance in instances[:50]:
    assert (instance.tokens[0] == "[CLS]" and instance.tokens[-1] == "[SEP]"
            and len(instance.tokens) <= 64)
    assert instance.masked_lm_positions == sorted(set(instance.masked_lm_positions))
    assert all(instance.tokens[p] not in ("[CLS]", "[SEP]") or instance.masked_lm_labels[i] not in
               ("[CLS]", "[SEP]") for i, p in enumerate(instance.masked_lm_positions))
  outputs = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
  written = cpd.write_instance_to_example_files(instances, tokenizer, 64, 10, outputs)
  records = _read(outputs[0]) + _read(outputs[1])
  assert written == len(records) == len(instances)
  first = instances[0]
  np.testing.assert_array_equal(records[0]["input_ids"][:len(first.tokens)],
                                tokenizer.convert_tokens_to_ids(first.tokens))


def test_create_masked_lm_predictions_budget_and_labels():
  tokens = ["[CLS]"] + [f"w{i}" for i in range(30)] + ["[SEP]"] + ["w1", "##s"] * 5 + ["[SEP]"]
  vocab = VOCAB
  output, positions, labels = cpd.create_masked_lm_predictions(tokens, 0.15, 20, vocab,
                                                               random.Random(0))
  assert len(positions) == round(len(tokens) * 0.15)
  assert positions == sorted(set(positions))
  assert labels == [tokens[p] for p in positions]
  assert all(tokens[p] not in ("[CLS]", "[SEP]") for p in positions)
  assert [t for i, t in enumerate(output) if i not in positions] == [t for i, t in enumerate(tokens)
                                                                     if i not in positions]
  instances = cpd.create_instances_from_document(
      [[["a", "b", "c"], ["d", "e"]], [["x", "y"]]], 0, 16, 0.0, 0.15, 3, vocab, random.Random(1))
  assert instances and all(i.tokens[0] == "[CLS]" for i in instances)


# ------------------------------------------------------------------------------------- CLI


def test_cli_main_writes_records(data_dir, tmp_path, capsys):
  output = tmp_path / "cli.tfrecord"
  code = cli.main(["prog", f"--input_file={data_dir / 'corpus.txt'}", f"--output_file={output}",
                   f"--vocab_file={data_dir / 'vocab.txt'}", "--dupe_factor=1",
                   "--max_seq_length=64", "--max_predictions_per_seq=10", "--num_workers=1",
                   "--nodo_lower_case"])
  assert code == 0
  meta = data_metadata.load_metadata(str(output))
  assert meta["max_seq_length"] == 64 and meta["do_lower_case"] is False
  assert "instances" in capsys.readouterr().err


def test_cli_reports_bad_vocab_clearly(data_dir, tmp_path, capsys):
  bad = tmp_path / "v.txt"
  bad.write_text("[PAD]\n[UNK]\n", encoding="utf-8")
  code = cli.main(["prog", f"--input_file={data_dir / 'corpus.txt'}",
                   f"--output_file={tmp_path / 'o'}", f"--vocab_file={bad}"])
  assert code == 1
  assert "[CLS]" in capsys.readouterr().err


def test_model_garden_window_and_word_span_helpers():
  from official.nlp.data import create_pretraining_data as cpd  # pylint: disable=g-import-not-at-top
  assert [list(cpd._window([1, 2, 3, 4], n)) for n in (1, 3, 5)] == [
      [[1], [2], [3], [4]], [[1, 2, 3], [2, 3, 4]], []]
  assert cpd._tokens_to_grams(['[CLS]', 'Up', '##dog', '[SEP]', 'Down', '##s', '##y', 'x']) == [
      (1, 3), (4, 7), (7, 8)]
  assert cpd._tokens_to_grams([]) == []


def test_string_token_api_is_one_module_importable_from_both_paths():
  from official.nlp.data import string_token_instances  # pylint: disable=g-import-not-at-top
  for name in string_token_instances.__all__:
    assert getattr(cpd, name) is getattr(string_token_instances, name), name
  assert cpd._window is string_token_instances._window  # Model Garden's tests call them here
  assert cpd._tokens_to_grams is string_token_instances._tokens_to_grams


def test_options_are_one_frozen_dataclass_checked_before_any_work(tmp_path):
  options = cpd.PretrainingDataOptions(max_seq_length=64, pack=True)
  options.check()
  assert not options.next_sentence  # pack implies single pieces, whatever no_next_sentence says
  assert options.instance_options().next_sentence is False and options.instance_options().pack
  assert cpd.PretrainingDataOptions().next_sentence
  with pytest.raises(dataclasses.FrozenInstanceError):
    options.pack = False
  with pytest.raises(ValueError, match="pack and sentence_order cannot be combined"):
    cpd.PretrainingDataOptions(pack=True, sentence_order=True).check()
  with pytest.raises(ValueError, match="dupe_factor must be >= 1, found 0"):
    cpd.PretrainingDataOptions(dupe_factor=0).check()
  # create_pretraining_data refuses it the same way, before reading the input or writing files.
  with pytest.raises(ValueError, match="masked_lm_prob must be in \\(0, 1\\), found 1.5"):
    cpd.create_pretraining_data(str(tmp_path / "missing.txt"), str(tmp_path / "out" / "o"),
                                masked_lm_prob=1.5)
  assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ validation split, shards


def _documents_of(records):
  """The `docN` numbers whose tokens appear in `records` (masked positions restored)."""
  found = set()
  for record in records:
    found.update(DOC_TOKEN[t] for t in _originals(record).tolist() if t in DOC_TOKEN)
  return found


def test_validation_split_holds_out_whole_documents(data_dir, tmp_path):
  output = str(tmp_path / "train.tfrecord")
  metadata = cpd.create_pretraining_data(
      str(data_dir / "corpus.txt"), output, str(data_dir / "vocab.txt"), dupe_factor=2,
      max_seq_length=SEQ, max_predictions_per_seq=MAX_PRED, num_workers=1,
      num_output_shards=2, validation_fraction=0.1)
  validation_path = str(tmp_path / "validation.tfrecord")
  held_out = _documents_of(_read(validation_path))
  trained = _documents_of(
      [r for p in data_metadata.record_paths(output + "-*") for r in _read(p)])
  # 10% of the 60 documents, every one of them only in the validation records (random next
  # segments of NSP pairs included), the others only in training.
  assert len(held_out) == round(0.1 * NUM_DOCS)
  assert not held_out & trained and held_out | trained == set(range(NUM_DOCS))
  validation = data_metadata.load_metadata(validation_path)
  assert validation["metadata_path"] == str(tmp_path / "validation.metadata.json")
  assert (validation["split"], validation["dupe_factor"], validation["num_documents"]) == (
      "validation", 1, len(held_out))
  assert validation["num_instances"] == len(_read(validation_path)) > 0
  assert metadata["split"] == "train" and metadata["num_documents"] == NUM_DOCS - len(held_out)
  assert metadata["validation_files"] == ["validation.tfrecord"]
  assert metadata["validation"]["files"] == ["validation.tfrecord"]
  for key in ("max_seq_length", "max_predictions_per_seq", "vocab_sha256", "feature_names"):
    assert validation[key] == metadata[key], key
  # The same seed holds out the same documents.
  again = tmp_path / "again"
  cpd.create_pretraining_data(
      str(data_dir / "corpus.txt"), str(again / "t.tfrecord"), str(data_dir / "vocab.txt"),
      dupe_factor=1, num_workers=1, validation_fraction=0.1,
      validation_output_file=str(again / "heldout.tfrecord"))
  assert _documents_of(_read(str(again / "heldout.tfrecord"))) == held_out


def test_validation_split_refuses_what_cannot_be_split(data_dir, tmp_path):
  one_document = tmp_path / "one.txt"
  one_document.write_text("Doc1 w1 w2 w3.\nDoc1 w4 w5.\n", encoding="utf-8")
  with pytest.raises(ValueError, match=r"validation_fraction=0.5 of 1 document\(s\) holds out"):
    cpd.create_pretraining_data(str(one_document), str(tmp_path / "t.tfrecord"),
                                str(data_dir / "vocab.txt"), num_workers=1,
                                validation_fraction=0.5)
  with pytest.raises(ValueError, match="validation_fraction must be in"):
    cpd.create_pretraining_data(str(one_document), str(tmp_path / "t.tfrecord"),
                                str(data_dir / "vocab.txt"), validation_fraction=1.0)
  with pytest.raises(ValueError, match="needs validation_fraction > 0"):
    cpd.create_pretraining_data(str(one_document), str(tmp_path / "t.tfrecord"),
                                str(data_dir / "vocab.txt"),
                                validation_output_file=str(tmp_path / "v.tfrecord"))
  with pytest.raises(ValueError, match="would share the metadata file"):
    cpd.create_pretraining_data(str(one_document), str(tmp_path / "t.tfrecord"),
                                str(data_dir / "vocab.txt"), validation_fraction=0.1,
                                validation_output_file=str(tmp_path / "t.tfrecord.gz"))
  assert not list(tmp_path.glob("t*"))  # refused before any file was written


def test_no_shard_is_written_empty(data_dir, tmp_path, caplog):
  # A small text into more shards than its single work unit: smaller work units fill them all.
  output = str(tmp_path / "small.tfrecord")
  metadata = cpd.create_pretraining_data(
      str(data_dir / "corpus.txt"), output, str(data_dir / "vocab.txt"), dupe_factor=1,
      num_workers=1, num_output_shards=4)
  assert [metadata["instances_per_file"][f] > 0 for f in metadata["files"]] == [True] * 4
  # One short document cannot fill two shards: one shard, renumbered, and a warning saying so.
  tiny = tmp_path / "tiny.txt"
  tiny.write_text("Doc1 w1 w2 w3.\n", encoding="utf-8")
  with caplog.at_level(logging.WARNING):
    metadata = cpd.create_pretraining_data(str(tiny), str(tmp_path / "tiny.tfrecord"),
                                           str(data_dir / "vocab.txt"), dupe_factor=1,
                                           num_workers=1, num_output_shards=2)
  assert metadata["files"] == ["tiny.tfrecord-00000-of-00001"]
  assert sorted(p.name for p in tmp_path.glob("tiny.tfrecord*")) == metadata["files"]
  assert "fills only 1 shard(s)" in caplog.text
  assert len(_read(str(tmp_path / metadata["files"][0]))) == metadata["num_instances"] == 1
  # Files named one by one are not renamed: too many of them is an error naming them.
  with pytest.raises(ValueError, match=r"1 of the 2 files named would be empty \(b.tfrecord\)"):
    cpd.create_pretraining_data(str(tiny), f"{tmp_path / 'a.tfrecord'},{tmp_path / 'b.tfrecord'}",
                                str(data_dir / "vocab.txt"), dupe_factor=1, num_workers=1)
  assert not list(tmp_path.glob("[ab].*"))


def test_cli_validation_fraction(data_dir, tmp_path, capsys):
  code = cli.main(["prog", f"--input_file={data_dir / 'corpus.txt'}",
                   f"--output_file={tmp_path / 'train.tfrecord'}",
                   f"--vocab_file={data_dir / 'vocab.txt'}", "--dupe_factor=1",
                   "--num_workers=1", "--validation_fraction=0.05"])
  assert code == 0
  assert "validation: 3 held-out documents" in capsys.readouterr().err
  assert data_metadata.load_metadata(str(tmp_path / "validation.tfrecord"))["num_documents"] == 3
