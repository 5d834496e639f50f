"""Issue 14, data side: record sets carry a fingerprint that training verifies, data creation
commits shards and metadata as one set, memory stays bounded (spilled records, long lines in
pieces), workers capped, unwritable output directories fail before any work.

Tests official/nlp/data/{data_metadata, create_pretraining_data, tokenized_corpus,
pretrain_dataloader}.py and data_tools/create_pretraining_data.py.
"""

import json
import logging
import os
import shutil
import zlib

import numpy as np
import pytest

from data_tools import create_pretraining_data as cli
from official.nlp import train
from official.nlp.data import create_pretraining_data as cpd
from official.nlp.data import data_metadata
from official.nlp.data import pretrain_dataloader
from official.nlp.data import pretraining_units
from official.nlp.data import tokenized_corpus
from official.nlp.data.tokenization import WordPieceTokenizer
from tests import testing
from tests.cli import run_app
from tests.nlp.data.pretraining_records import write_records
from tests.nlp.data.test_create_pretraining_data import VOCAB, corpus_dir
from tests.paths import ROOT

SEQ, MAX_PRED = 32, 5


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
  return corpus_dir(tmp_path_factory, "integrity", num_docs=20)


def _create(inputs, output, **kwargs):
  options = dict(dupe_factor=2, max_seq_length=SEQ, max_predictions_per_seq=MAX_PRED, num_workers=1)
  options.update(kwargs)
  return cpd.create_pretraining_data(str(inputs / "corpus.txt"), str(output),
                                     str(inputs / "vocab.txt"), **options)


def _shards(directory, stem="train.tfrecord"):
  return sorted(str(p) for p in directory.glob(stem + "*"))


def _loader_config(pattern, **kwargs):
  return pretrain_dataloader.BertPretrainDataConfig(input_path=str(pattern), seq_length=SEQ,
                                                    max_predictions_per_seq=MAX_PRED,
                                                    global_batch_size=2, **kwargs)


def _load_error(pattern, **kwargs) -> str:
  with pytest.raises(ValueError) as error:
    pretrain_dataloader.BertPretrainDataLoader(_loader_config(pattern, **kwargs)).load()
  message = str(error.value)
  assert "\n" not in message
  return message


@pytest.fixture
def record_set(inputs, tmp_path, monkeypatch):
  """Four non-empty shards of a fresh set and their metadata."""
  with monkeypatch.context() as patch:
    patch.setattr(cpd, "_CHUNK_TOKENS", 500)  # enough work units for four shards
    _create(inputs, tmp_path / "train.tfrecord", num_output_shards=4)
  return tmp_path


# -------------------------------------------------------------------------------------- fingerprint


@pytest.mark.slow
def test_metadata_lists_every_shard_with_count_size_and_crc(record_set):
  metadata = data_metadata.load_metadata(str(record_set / "train.tfrecord*"))
  assert "state" not in metadata
  entries = {e["file"]: e for e in metadata["shards"]}
  assert sorted(entries) == [os.path.basename(p) for p in _shards(record_set)]
  for path in _shards(record_set):
    entry = entries[os.path.basename(path)]
    data = open(path, "rb").read()
    assert entry["bytes"] == len(data) and entry["crc32"] == zlib.crc32(data)
    assert entry["records"] == metadata["instances_per_file"][os.path.basename(path)] > 0
  assert sum(e["records"] for e in entries.values()) == metadata["num_instances"]
  assert [p for p in os.listdir(record_set) if p.startswith(".")] == []  # no staging left
  # A complete set loads.
  batch = next(iter(pretrain_dataloader.BertPretrainDataLoader(
      _loader_config(record_set / "train.tfrecord*")).load()))
  assert batch["input_word_ids"].shape == (2, SEQ)


def test_a_glob_matching_the_metadata_file_reads_the_records_only(record_set):
  files = pretrain_dataloader.list_input_files(str(record_set / "*"))
  assert files == _shards(record_set)
  pretrain_dataloader.BertPretrainDataLoader(_loader_config(record_set / "*")).load()


def test_truncated_shard_is_refused_naming_file_expected_and_found(record_set):
  path = _shards(record_set)[1]
  size = os.path.getsize(path)
  with open(path, "r+b") as f:
    f.truncate(size // 2)
  message = _load_error(record_set / "train.tfrecord*")
  assert path in message and f"{size // 2} bytes, expected {size}" in message


def test_extra_foreign_shard_matching_the_glob_is_refused(record_set, tmp_path_factory):
  other = tmp_path_factory.mktemp("other")
  write_records(str(other / "x.tfrecord"), 3, seq_length=SEQ, max_predictions=MAX_PRED)
  extra = record_set / "train.tfrecord-00004-of-00004"
  shutil.copy(other / "x.tfrecord", extra)
  message = _load_error(record_set / "train.tfrecord*")
  assert str(extra) in message and "not part of the record set" in message


def test_missing_shard_is_refused(record_set):
  missing = _shards(record_set)[2]
  os.remove(missing)
  message = _load_error(record_set / "train.tfrecord*")
  assert missing in message and "missing" in message and "found no file" in message


def test_same_size_foreign_content_needs_the_checksum_option(record_set):
  path = _shards(record_set)[0]
  data = bytearray(open(path, "rb").read())
  data[len(data) // 2] ^= 0xFF
  open(path, "wb").write(bytes(data))
  # size: ok
  pretrain_dataloader.BertPretrainDataLoader(_loader_config(record_set / "train.tfrecord*")).load()
  message = _load_error(record_set / "train.tfrecord*", verify_records="checksum")
  assert path in message and "CRC-32" in message
  pretrain_dataloader.BertPretrainDataLoader(
      _loader_config(record_set / "train.tfrecord*", verify_records="none")).load()


def test_records_without_metadata_still_load_with_one_info_line(tmp_path, caplog):
  write_records(str(tmp_path / "mg.tfrecord"), 4, seq_length=SEQ, max_predictions=MAX_PRED)
  with caplog.at_level(logging.INFO, logger="official.nlp.data.data_metadata"):
    for _ in range(2):
      pretrain_dataloader.BertPretrainDataLoader(_loader_config(tmp_path / "*.tfrecord")).load()
  assert sum("not verified" in r.getMessage() for r in caplog.records) == 1


def test_dynamic_length_loader_verifies_too(record_set):
  from official.nlp.data import pretrain_dynamic_dataloader  # pylint: disable=g-import-not-at-top
  path = _shards(record_set)[3]
  with open(path, "r+b") as f:
    f.truncate(100)
  config = pretrain_dynamic_dataloader.BertPretrainBucketedDataConfig(
      input_path=str(record_set / "train.tfrecord*"), seq_length=SEQ,
      max_predictions_per_seq=MAX_PRED, global_batch_size=2, seq_bucket_lengths=(SEQ,))
  with pytest.raises(ValueError, match="expected"):
    pretrain_dynamic_dataloader.PretrainingDynamicDataLoader(config).load()


# ------------------------------------------------------------------------------------ atomic commit


def _snapshot(directory):
  return {name: open(directory / name, "rb").read() for name in sorted(os.listdir(directory))}


def test_rerun_interrupted_while_building_keeps_the_old_set(inputs, record_set, monkeypatch):
  before = _snapshot(record_set)
  calls = []

  def fail_after_two_units(spilled_bytes):
    calls.append(1)
    if len(calls) == 2:
      raise RuntimeError("injected")

  monkeypatch.setattr(cpd, "_CHUNK_TOKENS", 200)  # several units per shard
  monkeypatch.setattr(cpd, "_after_unit_hook", fail_after_two_units)
  with pytest.raises(RuntimeError):
    _create(inputs, record_set / "train.tfrecord", num_output_shards=2, random_seed=7)
  # Old shards and metadata intact, no staging directory left.
  assert _snapshot(record_set) == before
  pretrain_dataloader.BertPretrainDataLoader(_loader_config(record_set / "train.tfrecord*")).load()


def test_rerun_interrupted_while_committing_is_refused_then_completed(inputs, record_set,
                                                                      monkeypatch):
  real_replace = os.replace
  moved = []

  def replace_one_then_die(source, target):
    if ".create_pretraining_data-" in str(source) and not str(source).endswith(".partial"):
      if moved:
        raise KeyboardInterrupt
      moved.append(target)
    return real_replace(source, target)

  monkeypatch.setattr(os, "replace", replace_one_then_die)
  with pytest.raises(KeyboardInterrupt):
    _create(inputs, record_set / "train.tfrecord", num_output_shards=2, random_seed=7)
  monkeypatch.setattr(os, "replace", real_replace)
  # One new shard sits beside the old ones: the metadata says the set is half-replaced, training
  # refuses.
  message = _load_error(record_set / "train.tfrecord*")
  assert str(record_set / "train.metadata.json") in message and "committing" in message
  # A rerun completes: only the new set remains (the old 4-shard names are gone) and it loads.
  _create(inputs, record_set / "train.tfrecord", num_output_shards=2, random_seed=7)
  assert [os.path.basename(p) for p in _shards(record_set)] == [
      "train.tfrecord-00000-of-00002", "train.tfrecord-00001-of-00002"]
  assert sorted(os.listdir(record_set)) == ["train.metadata.json", "train.tfrecord-00000-of-00002",
                                            "train.tfrecord-00001-of-00002"]
  pretrain_dataloader.BertPretrainDataLoader(_loader_config(record_set / "train.tfrecord*")).load()


def test_new_set_replaces_old_shards_listed_in_old_metadata(inputs, record_set):
  _create(inputs, record_set / "train.tfrecord", random_seed=3)
  assert sorted(os.listdir(record_set)) == ["train.metadata.json", "train.tfrecord"]
  metadata = json.load(open(record_set / "train.metadata.json"))
  assert ([e["file"] for e in metadata["shards"]] == ["train.tfrecord"]
          and "replaces" not in metadata)


def test_disk_full_is_one_line_and_keeps_the_old_set(inputs, record_set, monkeypatch, capsys):
  before = _snapshot(record_set)

  def disk_full(self, pieces):
    raise OSError(28, "No space left on device", self.partial_path)

  monkeypatch.setattr(pretraining_units.tfrecord_writer.AtomicRecordFile, "writelines", disk_full)
  code = cli.main(["prog", f"--input_file={inputs / 'corpus.txt'}",
                   f"--output_file={record_set / 'train.tfrecord'}",
                   f"--vocab_file={inputs / 'vocab.txt'}", "--num_workers=1", "--dupe_factor=1"])
  err = capsys.readouterr().err
  last = err.strip().splitlines()[-1]  # after the progress bars
  assert code == 1 and "Traceback" not in err and err.count("error:") == 1
  assert (last.startswith("create_pretraining_data: error: ")
          and last.endswith("No space left on device"))
  assert "train.tfrecord.partial" in last
  assert _snapshot(record_set) == before


def test_outputs_in_two_directories_are_one_set(inputs, tmp_path):
  first, second = tmp_path / "a" / "x.tfrecord", tmp_path / "b" / "y.tfrecord"
  _create(inputs, f"{first},{second}")
  metadata = json.load(open(tmp_path / "a" / "x.metadata.json"))
  assert [e["file"] for e in metadata["shards"]] == ["x.tfrecord",
                                                     os.path.join("..", "b", "y.tfrecord")]
  pretrain_dataloader.BertPretrainDataLoader(_loader_config(first)).load()
  os.remove(second)  # a file of the set is gone: reading the other one is refused too
  message = _load_error(first)
  assert str(second) in message and "missing" in message


def test_stale_staging_of_a_killed_run_is_removed(inputs, tmp_path):
  stale = tmp_path / ".create_pretraining_data-999999999.tmp"
  stale.mkdir()
  (stale / "train.tfrecord.spill").write_bytes(b"x" * 10)
  _create(inputs, tmp_path / "train.tfrecord")
  assert sorted(os.listdir(tmp_path)) == ["train.metadata.json", "train.tfrecord"]


# ----------------------------------------------------------------------------------- bounded memory


def test_records_are_spilled_incrementally(inputs, tmp_path, monkeypatch):
  monkeypatch.setattr(cpd, "_CHUNK_TOKENS", 200)
  positions = []
  monkeypatch.setattr(cpd, "_after_unit_hook", positions.append)
  metadata = _create(inputs, tmp_path / "train.tfrecord", num_workers=2)
  # The spill file received each unit's records as the unit came (nothing accumulates in memory) ...
  assert len(positions) == 2 * len(cpd._chunk_documents(_corpus(inputs))) > 4
  assert all(b > a for a, b in zip(positions, positions[1:]))
  # ... and the output holds them all: the spill size is the output size (uncompressed).
  assert (positions[-1] == os.path.getsize(tmp_path / "train.tfrecord")
          == metadata["shards"][0]["bytes"])


def _corpus(inputs):
  corpus, _ = tokenized_corpus.read_tokenized_corpus([str(inputs / "corpus.txt")],
                                                     _tokenizer(inputs))
  return corpus


def test_small_write_chunks_give_identical_bytes(inputs, tmp_path, monkeypatch):
  _create(inputs, tmp_path / "a" / "train.tfrecord")
  real = pretraining_units.write_shuffled
  monkeypatch.setattr(pretraining_units, "write_shuffled",
                      lambda f, spill, lengths, order: real(f, spill, lengths, order, 7))
  _create(inputs, tmp_path / "b" / "train.tfrecord")
  assert (open(tmp_path / "a" / "train.tfrecord", "rb").read()
          == open(tmp_path / "b" / "train.tfrecord", "rb").read())


def _tokenizer(inputs):
  return WordPieceTokenizer.from_vocab_file(str(inputs / "vocab.txt"))


def test_long_lines_are_read_in_bounded_pieces_with_the_same_tokens(inputs, tmp_path, monkeypatch):
  words = " ".join(f"w{i % 100}ing" for i in range(3000))
  # A long line, a line of only spaces (blank: it ends the document), a long word.
  text = (f"Doc1 {words}.\nDoc1 w1 w2.\n\nDoc2 w3 {'  ' * 50} w4\n" + "   " * 40 + "\n\nDoc3 "
          + "w5" * 300 + "\n")
  path = tmp_path / "long.txt"
  path.write_text(text, encoding="utf-8")
  reference, reference_stats = tokenized_corpus.read_tokenized_corpus([str(path)],
                                                                      _tokenizer(inputs))
  monkeypatch.setattr(tokenized_corpus, "_BLOCK_BYTES", 64)
  monkeypatch.setattr(tokenized_corpus, "_MAX_LINE_PIECE", 100)
  blocks = list(tokenized_corpus._blocks(str(path)))
  assert max(len(b) for b, _ in blocks) <= 64 + 2 * 100 and sum(cut for _, cut in blocks) > 100
  assert b"".join(b for b, _ in blocks) == path.read_bytes()
  corpus, stats = tokenized_corpus.read_tokenized_corpus([str(path)], _tokenizer(inputs))
  # Same sentences and tokens, except the last sentence: its 600-character word was cut mid-word (no
  # whitespace): an [UNK] per piece instead of one.
  np.testing.assert_array_equal(corpus.sentence_starts[:-1], reference.sentence_starts[:-1])
  np.testing.assert_array_equal(corpus.document_starts, reference.document_starts)
  last = reference.sentence_starts[-2]
  np.testing.assert_array_equal(corpus.token_ids[:last], reference.token_ids[:last])
  unk = VOCAB.index("[UNK]")
  assert (reference.token_ids[last + 1:].tolist() == [unk]
          and set(corpus.token_ids[last + 1:].tolist()) == {unk})
  assert (stats.lines, stats.blank_lines, corpus.num_documents) == (
      reference_stats.lines, reference_stats.blank_lines, reference_stats.documents) == (7, 3, 3)


def test_one_huge_line_without_newline(inputs, tmp_path, monkeypatch):
  monkeypatch.setattr(tokenized_corpus, "_BLOCK_BYTES", 50)
  monkeypatch.setattr(tokenized_corpus, "_MAX_LINE_PIECE", 40)
  (tmp_path / "one.txt").write_text(" ".join(f"w{i % 100}" for i in range(2000)), encoding="utf-8")
  corpus, stats = tokenized_corpus.read_tokenized_corpus([str(tmp_path / "one.txt")],
                                                         _tokenizer(inputs))
  assert (corpus.num_documents, stats.sentences, stats.lines, corpus.num_tokens) == (1, 1, 1, 2000)


def _folded(blocks, fast: bool):
  """Folds `(kinds, lengths)` blocks (files split where kinds is None) with the numpy path or only
  the line-by-line reference; the sentence starts, document starts and line counts."""
  stats = tokenized_corpus.CorpusStats()
  folder = tokenized_corpus._LineFolder(stats)
  for kinds, lengths in blocks:
    if kinds is None:
      folder.new_file()
    elif fast:
      folder.add(kinds, lengths, cut=False)
    else:
      folder._fold_lines(kinds, lengths, cut=False)
  return (folder.sentence_starts().tolist(), folder.document_starts().tolist(),
          (stats.lines, stats.blank_lines, stats.empty_token_lines))


def test_blocks_fold_into_the_same_sentences_and_documents_as_line_by_line():
  """Random blocks of blank, text, empty-token and invalid lines, across files: the numpy fold
  equals the line-by-line one (blank runs, documents spanning blocks, blocks without text)."""
  rng = np.random.default_rng(7)
  blocks = []
  for _ in range(300):
    if rng.random() < 0.05:
      blocks.append((None, None))
      continue
    kinds = rng.choice([0, 1, 1, 1, 2], size=int(rng.integers(0, 12))).astype(np.uint8)
    lengths = rng.integers(0, 4, size=int((kinds == 1).sum()))  # 0: a line without tokens
    blocks.append((kinds.tobytes(), lengths))
  fast, reference = _folded(blocks, True), _folded(blocks, False)
  assert fast == reference
  assert len(reference[1]) > 20 and reference[2][1] > 100  # many documents and blank lines
  # The docstring's example, by hand.
  assert _folded([(None, None), (b"\x01\x01\x00\x01", np.array([3, 2, 4]))], True)[:2] == (
      [0, 3, 5, 9], [0, 2, 3])


# ------------------------------------------------------------------------------ workers, output dir


def test_num_workers_capped_to_the_cpus_with_a_warning(inputs, tmp_path, caplog):
  with caplog.at_level(logging.WARNING, logger="official.nlp.data.create_pretraining_data"):
    _create(inputs, tmp_path / "many" / "train.tfrecord", num_workers=10_000)
  assert any("num_workers=10000" in r.getMessage() for r in caplog.records)
  _create(inputs, tmp_path / "one" / "train.tfrecord", num_workers=1)
  assert (open(tmp_path / "many" / "train.tfrecord", "rb").read()
          == open(tmp_path / "one" / "train.tfrecord", "rb").read())


def test_cli_num_workers_below_one_is_a_flag_error(inputs, tmp_path, capsys):
  code = cli.main(["prog", f"--input_file={inputs / 'corpus.txt'}",
                   f"--output_file={tmp_path / 'o.tfrecord'}",
                   f"--vocab_file={inputs / 'vocab.txt'}", "--num_workers=0"])
  assert code == 2
  assert "num_workers" in capsys.readouterr().err


def _never_tokenize(*args, **kwargs):
  raise AssertionError("the corpus was read before the output directory was checked")


def test_unwritable_output_dir_fails_before_tokenizing(inputs, tmp_path, monkeypatch, capsys):
  monkeypatch.setattr(tokenized_corpus, "read_tokenized_corpus", _never_tokenize)
  read_only = tmp_path / "read_only"
  read_only.mkdir()
  real_mkdir = os.mkdir

  def mkdir(path, *args, **kwargs):
    if os.path.dirname(os.path.abspath(path)) == str(read_only):
      raise PermissionError(13, "Permission denied", str(path))
    return real_mkdir(path, *args, **kwargs)

  monkeypatch.setattr(os, "mkdir", mkdir)
  code = cli.main(["prog", f"--input_file={inputs / 'corpus.txt'}",
                   f"--output_file={read_only / 'o.tfrecord'}",
                   f"--vocab_file={inputs / 'vocab.txt'}", "--num_workers=1"])
  err = capsys.readouterr().err.strip()
  assert code == 1
  assert err == (f"create_pretraining_data: error: output_file: cannot write to the directory "
                 f"'{read_only}' (Permission denied); expected a writable directory")
  assert os.listdir(read_only) == []


def test_output_under_a_regular_file_fails_before_tokenizing(inputs, tmp_path, monkeypatch, capsys):
  monkeypatch.setattr(tokenized_corpus, "read_tokenized_corpus", _never_tokenize)
  (tmp_path / "file").write_text("x")
  code = cli.main(["prog", f"--input_file={inputs / 'corpus.txt'}",
                   f"--output_file={tmp_path / 'file' / 'o.tfrecord'}",
                   f"--vocab_file={inputs / 'vocab.txt'}"])
  err = capsys.readouterr().err.strip().splitlines()
  assert code == 1 and len(err) == 1
  assert str(tmp_path / "file") in err[0] and "expected a writable directory" in err[0]


def _read_all(pattern):
  config = _loader_config(pattern, is_training=False, drop_remainder=False)
  return sum(int(b["input_word_ids"].shape[0])
             for b in pretrain_dataloader.BertPretrainDataLoader(config).load())


def test_truncated_file_without_metadata_fails_at_its_end_naming_it(tmp_path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  write_records(str(tmp_path / "a.tfrecord"), 6, seq_length=SEQ, max_predictions=MAX_PRED)
  write_records(str(tmp_path / "b.tfrecord"), 6, seq_length=SEQ, max_predictions=MAX_PRED)
  assert _read_all(tmp_path / "*.tfrecord") == 12  # complete files read as before
  path = tmp_path / "b.tfrecord"
  size = os.path.getsize(path)
  with open(path, "r+b") as f:
    # Mid-record: TensorFlow alone reads the first records and stops silently.
    f.truncate(size // 2 + 5)
  with pytest.raises(tf.errors.InvalidArgumentError) as error:
    _read_all(tmp_path / "*.tfrecord")
  line = pretrain_dataloader.record_error_line(error.value)  # the one line a CLI prints
  assert line.startswith(f"{path}: truncated or corrupt: its complete TFRecords end at byte ")
  assert line.endswith(f" but the file has {size // 2 + 5} bytes")
  assert pretrain_dataloader.record_error_line(ValueError("other")) is None


@pytest.mark.slow
@pytest.mark.parametrize("cut", ["mid_file", "last_record"])
def test_train_py_stops_on_a_truncated_file_without_metadata_with_one_line(tmp_path, cut):
  path = tmp_path / "a.tfrecord"
  write_records(str(path), 40, seq_length=SEQ, max_predictions=MAX_PRED)
  size = os.path.getsize(path)
  # Cut inside a record's header, TensorFlow reads the records before it and stops silently (our
  # end-of-file check names the file); cut inside the last record's data, TensorFlow raises
  # "truncated record at N".
  new_size = size // 2 + 5 if cut == "mid_file" else size - 7
  with open(path, "r+b") as f:
    f.truncate(new_size)
  overrides = ",".join([
      f"task.train_data.input_path={path}", f"task.train_data.seq_length={SEQ}",
      f"task.train_data.max_predictions_per_seq={MAX_PRED}", "task.train_data.global_batch_size=8",
      # bert_tiny.yaml's position table: its validation_data.seq_length (128) must fit.
      *testing.tiny_overrides(vocab_size=50, num_layers=1, max_position_embeddings=512),
      "trainer.train_steps=20",
      "trainer.steps_per_loop=10", "trainer.checkpoint_interval=10"])
  # train.py in this process (tests/cli.py), as `python -m official.nlp.train` runs it.
  result = run_app(train.main, [
      "train", "--experiment=bert/pretraining", "--mode=train",
      f"--config_file={os.path.join(ROOT, 'configs', 'pretraining', 'bert_tiny.yaml')}",
      f"--params_override={overrides}", f"--model_dir={tmp_path / 'run'}"])
  assert result.returncode == 1, result.stderr[-2000:]
  assert "Traceback" not in result.stderr
  errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
  assert len(errors) == 1, result.stderr[-2000:]
  if cut == "mid_file":
    assert errors[0].startswith(f"error: {path}: truncated or corrupt: its complete TFRecords "
                                "end at byte ")
    assert errors[0].endswith(f"but the file has {new_size} bytes")
  else:
    assert errors[0].startswith(f"error: task.train_data.input_path={path}: a truncated or "
                                "corrupt TFRecord (")
    assert "verify_records=checksum" in errors[0]
