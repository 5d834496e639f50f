#!/usr/bin/env bash
# Benchmark: mlm-garden's create_pretraining_data (1 and 2 workers, 2 with the shard written by one process,
# and the Beam engine on 2 worker processes)
# against Model Garden's script, side by side
# on the same corpus and flags (issue 4's acceptance: >= 20x less wall time, <= half the peak memory, 2 cores).
#
# Corpus: the Python documentation sources of Debian's python3.11-doc (scripts/make_python_docs_corpus.py),
# vocabulary built from it by data_tools/build_vocab.py; flags: dupe_factor 5, whole-word masking,
# max_seq_length 128, max_predictions_per_seq 20, seed 12345.
#
# Model Garden runs from a throwaway venv ($MG_VENV, default /tmp/mg-venv; created with `pip install
# tf-models-official` when missing) and from an empty directory, so our `official` package is not on sys.path.
#
# Memory: every process of the run's tree (the command and all its descendants) is sampled every 50 ms from
# /proc/PID/smaps_rollup by a small Python sampler pinned to the same cores (it costs well under 1 ms a sample);
# "peak RSS" is the largest sum of the tree's resident set sizes (pages shared between forked workers counted
# once per process, i.e. an upper bound), "peak PSS" the largest sum of proportional set sizes (shared pages
# split between the processes sharing them: the tree's real footprint). Wall time is the command's, measured
# by the sampler from start to exit.
#
# Peak memory with one output file (50 MB input, and the same text as one line) is measured by
# scripts/benchmark_create_pretraining_data_memory.py.
#
# Usage: scripts/benchmark_create_pretraining_data.sh [work_dir]
#   (env: MG_VENV, PYTHON, SKIP_MG=1, SKIP_BEAM=1, CORES)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${1:-/tmp/cpd-benchmark}"
PYTHON="${PYTHON:-$REPO/.venv/bin/python}"
MG_VENV="${MG_VENV:-/tmp/mg-venv}"
CORES="${CORES:-0,1}"
mkdir -p "$WORK/out" "$WORK/mg-cwd"
CORPUS="$WORK/pydocs.txt"
VOCAB_DIR="$WORK/vocab"
FLAGS=(--do_lower_case=True --do_whole_word_mask=True --max_seq_length=128 --max_predictions_per_seq=20
       --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5)

if [[ ! -s "$CORPUS" ]]; then
  "$PYTHON" "$REPO/scripts/make_python_docs_corpus.py" --output_file="$CORPUS"
fi
if [[ ! -s "$VOCAB_DIR/vocab.txt" ]]; then
  (cd "$REPO" && "$PYTHON" -m data_tools.build_vocab --input_file="$CORPUS" --output_dir="$VOCAB_DIR")
fi
echo "corpus: $CORPUS ($(du -h "$CORPUS" | cut -f1))," \
  "vocab: $VOCAB_DIR/vocab.txt ($(wc -l < "$VOCAB_DIR/vocab.txt") tokens)"

# measure LABEL CWD CMD...: runs CMD pinned to $CORES, prints "LABEL wall peak_rss_mb peak_pss_mb" to $WORK/results.
# The sampler is `measure` of benchmark_create_pretraining_data_memory.py (one implementation of it).
SAMPLER='import importlib.util, sys
spec = importlib.util.spec_from_file_location("memory_benchmark", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
label, cwd, log, cmd = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
wall, rss, pss = module.measure(cmd, log, cwd)
print(f"{label} {wall:.2f} {rss:.0f} {pss:.0f}")'
measure() {
  local label="$1" cwd="$2"; shift 2
  taskset -c "$CORES" "$PYTHON" -c "$SAMPLER" "$REPO/scripts/benchmark_create_pretraining_data_memory.py" \
    "$label" "$cwd" "$WORK/$label.log" "$@" | tee -a "$WORK/results"
}
: > "$WORK/results"

if [[ "${SKIP_MG:-0}" != 1 ]]; then
  if [[ ! -x "$MG_VENV/bin/python" ]]; then
    python3 -m venv "$MG_VENV" && "$MG_VENV/bin/pip" install -q tf-models-official
  fi
  measure model_garden "$WORK/mg-cwd" "$MG_VENV/bin/python" -m official.nlp.data.create_pretraining_data \
    --input_file="$CORPUS" --output_file="$WORK/out/mg.tfrecord" --vocab_file="$VOCAB_DIR/vocab.txt" "${FLAGS[@]}"
  grep -o "Wrote [0-9]* total instances" "$WORK/model_garden.log" | awk '{print "model_garden_instances", $2}' \
    >> "$WORK/results"
fi
for workers in 1 2; do
  measure "ours_${workers}w" "$REPO" "$PYTHON" -m data_tools.create_pretraining_data --input_file="$CORPUS" \
    --output_file="$WORK/out/ours_${workers}w.tfrecord" --vocab_file="$VOCAB_DIR/vocab.txt" "${FLAGS[@]}" \
    --num_workers="$workers"
  grep -o "wrote [0-9]* instances" "$WORK/ours_${workers}w.log" \
    | awk -v l="ours_${workers}w_instances" '{print l, $2}' >> "$WORK/results"
done
cmp -s "$WORK/out/ours_1w.tfrecord" "$WORK/out/ours_2w.tfrecord" && echo "ours: 1 and 2 workers wrote identical records"
# 2 workers with the shard written by the main process alone (before the workers wrote it in parts).
SERIAL_WRITE='import sys
from official.nlp.data import pretraining_units
pretraining_units.PARALLEL_WRITE_MIN_RECORDS = 1 << 62
from data_tools import create_pretraining_data
sys.exit(create_pretraining_data.main(sys.argv))'
measure ours_2w_serial "$REPO" "$PYTHON" -c "$SERIAL_WRITE" --input_file="$CORPUS" \
  --output_file="$WORK/out/ours_2w_serial.tfrecord" --vocab_file="$VOCAB_DIR/vocab.txt" "${FLAGS[@]}" \
  --num_workers=2
grep -o "wrote [0-9]* instances" "$WORK/ours_2w_serial.log" \
  | awk '{print "ours_2w_serial_instances", $2}' >> "$WORK/results"
cmp -s "$WORK/out/ours_2w.tfrecord" "$WORK/out/ours_2w_serial.tfrecord" \
  && echo "ours: 2 workers wrote the same records with the serial write"
# The Beam engine (issue 60): Beam's portable runner on this machine, 2 worker processes.
if [[ "${SKIP_BEAM:-0}" != 1 ]]; then
  measure ours_beam_2w "$REPO" "$PYTHON" -m data_tools.create_pretraining_data --input_file="$CORPUS" \
    --output_file="$WORK/out/ours_beam_2w.tfrecord" --vocab_file="$VOCAB_DIR/vocab.txt" "${FLAGS[@]}" \
    --num_workers=2 --engine=beam --beam_pipeline_options=direct_num_workers=2
  grep -o "wrote [0-9]* instances" "$WORK/ours_beam_2w.log" \
    | awk '{print "ours_beam_2w_instances", $2}' >> "$WORK/results"
  cmp -s "$WORK/out/ours_2w.tfrecord" "$WORK/out/ours_beam_2w.tfrecord" \
    && echo "ours: the Beam engine wrote the local engine's records"
fi

"$PYTHON" - "$WORK/results" <<'EOF'
import sys
rows, instances = {}, {}
for line in open(sys.argv[1]):
  parts = line.split()
  if parts[0].endswith("_instances"):
    instances[parts[0][:-len("_instances")]] = int(parts[1])
  else:
    rows[parts[0]] = tuple(float(x) for x in parts[1:])
mg = rows.get("model_garden")
print(f"\n{'run':<14}{'wall s':>9}{'peak RSS MB':>13}{'peak PSS MB':>13}{'instances':>11}"
      + ("{:>12}{:>14}{:>14}".format("MG/ours t", "ours/MG RSS", "ours/MG PSS") if mg else ""))
for name, (wall, rss, pss) in rows.items():
  line = f"{name:<14}{wall:>9.2f}{rss:>13.0f}{pss:>13.0f}{instances.get(name, 0):>11}"
  if mg:
    line += f"{mg[0] / wall:>12.1f}{rss / mg[1]:>14.2f}{pss / mg[2]:>14.2f}"
  print(line)
EOF
