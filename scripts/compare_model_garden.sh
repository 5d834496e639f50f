#!/usr/bin/env bash
# Model Garden vs mlm-garden: the same YAML config and the same TFRecords through both frameworks'
# `official.nlp.train --experiment=bert/pretraining --mode=train_and_eval`, then a side-by-side table (and JSON)
# of median steps/s and the eval masked_lm_accuracy.
#
# Model Garden (`tf-models-official`, $MG_VERSION) lives in a throwaway venv (--mg_venv, default /tmp/mg-venv,
# created when missing, reused when present; never the project's .venv) and runs from an empty directory with
# PYTHONPATH unset, so our `official` package is not importable there. mlm-garden runs with the project's
# .venv ($PYTHON). Both get: configs/pretraining/bert_mini.yaml (4 layers, 256 hidden, 4 heads, 1024
# intermediate, NSP head) then one generated override YAML per run (vocab size of the records, data paths,
# seq 128, 20 predictions, batch 32, steps, steps_per_loop = summary_interval, validation_steps, checkpoint and
# validation only at the end, the learning-rate schedule over --steps with 10% warmup, one_device strategy,
# runtime.mixed_precision_dtype and runtime.enable_xla). Each framework first loads the model YAML strictly
# into its own config classes; a key it does not know is dropped for that framework only (printed as
# `dropped: ...`) and everything else stays identical. Thread pools are pinned identically
# (TF_NUM_INTRAOP_THREADS, TF_NUM_INTEROP_THREADS, OMP_NUM_THREADS = --threads).
#
# Data (made once under --data_dir, reused): a corpus from the Python documentation (Debian's python3.11-doc,
# installed with apt-get when missing and running as root; scripts/make_python_docs_corpus.py, 8 MB, ~114k
# training sequences at dupe_factor 5: 1000 steps of batch 32 read 28% of them) or, without it, the standard
# library docstrings (data_tools/stdlib_corpus.py, 1.5 MB: many more repeats); 95/5 document split, a 16k
# WordPiece vocabulary, whole-word masking.
#
# Variants (--variants, comma list): FRAMEWORK-DTYPE[-xla] with FRAMEWORK mg|ours, DTYPE float32|bfloat16|
# float16, or `ours-best` = ours with --ours_best (default bfloat16: with the code of 2026-11-23 XLA on CPU is
# slower, e.g. bfloat16+XLA 0.72x of bfloat16 in scripts/benchmark.py; pass --ours_best=bfloat16-xla when that
# changes). The variants named in --full (or `all`) train --steps steps (their eval accuracy is the comparison's
# accuracy); the others train --speed_steps steps (speed only; their eval accuracy is printed with its step).
# Model Garden's runtime.enable_xla only acts with num_gpus > 0 (base_trainer), so `mg-...-xla` is refused.
#
# Speed rounds (--speed_rounds, default 1): after those runs every variant trains --speed_steps steps again,
# round by round, in reverse order in odd rounds (so mg-float32 runs first and last): on a shared machine a
# slow or fast stretch then falls on both frameworks instead of on whichever ran at the time.
# Steps/s of a run: the median of its per-loop `steps_per_second` TensorBoard summaries (steps_per_loop steps
# each), the first loop (tracing, warm-up) left out (--speed_steps=300: 5 loops). Steps/s of a variant: the
# median of its runs' figures (with 2 runs, their mean); the table lists each run's figure too.
# Duration with the defaults on a quiet 2-core machine: about 40 minutes (Model Garden float32 1000 steps ~10,
# Model Garden bfloat16 300 steps ~3, ours float32 300 steps ~3, ours best 1000 steps ~6, setup ~1; the speed
# round ~13).
#
# Usage: scripts/compare_model_garden.sh [--steps=1000] [--speed_steps=300] [--speed_rounds=1]
#          [--variants=LIST] [--full=LIST] [--ours_best=bfloat16] [--steps_per_loop=50] [--validation_steps=50]
#          [--threads=N] [--work_dir=/tmp/mg-compare] [--data_dir=WORK/data] [--mg_venv=/tmp/mg-venv]
#          [--corpus=auto] [--setup_only] [--reuse]
#   --reuse: keep a variant's finished first run (same steps) instead of training it again.
# Output: WORK/runs/VARIANT-STEPS/ and WORK/runs/VARIANT-speedROUND/ ({train.log,variant.json,model/}),
# WORK/results.json, the table on stdout.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$REPO/.venv/bin/python}"
MG_VERSION="${MG_VERSION:-2.20.0}"
STEPS=1000
SPEED_STEPS=300
VARIANTS="mg-float32,mg-bfloat16,ours-float32,ours-best"
FULL="mg-float32,ours-best"
OURS_BEST="bfloat16"
STEPS_PER_LOOP=50
VALIDATION_STEPS=50
SPEED_ROUNDS=1
THREADS="$(nproc)"
WORK=/tmp/mg-compare
DATA_DIR=""
MG_VENV=/tmp/mg-venv
CORPUS=auto
SETUP_ONLY=0
REUSE=0
BASE_CONFIG="$REPO/configs/pretraining/bert_mini.yaml"

die() { echo "compare_model_garden: error: $*" >&2; exit 1; }
for arg in "$@"; do
  case "$arg" in
    --steps=*) STEPS="${arg#*=}" ;;
    --speed_steps=*) SPEED_STEPS="${arg#*=}" ;;
    --variants=*) VARIANTS="${arg#*=}" ;;
    --full=*) FULL="${arg#*=}" ;;
    --ours_best=*) OURS_BEST="${arg#*=}" ;;
    --steps_per_loop=*) STEPS_PER_LOOP="${arg#*=}" ;;
    --validation_steps=*) VALIDATION_STEPS="${arg#*=}" ;;
    --speed_rounds=*) SPEED_ROUNDS="${arg#*=}" ;;
    --threads=*) THREADS="${arg#*=}" ;;
    --work_dir=*) WORK="${arg#*=}" ;;
    --data_dir=*) DATA_DIR="${arg#*=}" ;;
    --mg_venv=*) MG_VENV="${arg#*=}" ;;
    --corpus=*) CORPUS="${arg#*=}" ;;
    --setup_only) SETUP_ONLY=1 ;;
    --reuse) REUSE=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$arg' (see --help)" ;;
  esac
done
for name in STEPS SPEED_STEPS STEPS_PER_LOOP VALIDATION_STEPS THREADS; do
  [[ "${!name}" =~ ^[1-9][0-9]*$ ]] || die "--${name,,}: expected a positive integer, found '${!name}'"
done
[[ "$SPEED_ROUNDS" =~ ^[0-9]+$ ]] || die "--speed_rounds: expected an integer >= 0, found '$SPEED_ROUNDS'"
case "$CORPUS" in auto|pydocs|stdlib) ;; *) die "--corpus: expected auto, pydocs or stdlib, found '$CORPUS'" ;; esac
DATA_DIR="${DATA_DIR:-$WORK/data}"
mkdir -p "$WORK/runs" "$WORK/mg-cwd" "$DATA_DIR"
WORK="$(cd "$WORK" && pwd)"; DATA_DIR="$(cd "$DATA_DIR" && pwd)"
[ -x "$PYTHON" ] || die "mlm-garden's python $PYTHON not found (run 'make test' or set PYTHON)"
export TF_CPP_MIN_LOG_LEVEL=2 TF_NUM_INTRAOP_THREADS="$THREADS" TF_NUM_INTEROP_THREADS="$THREADS" \
  OMP_NUM_THREADS="$THREADS"
HELPER=("$PYTHON" "$REPO/scripts/compare_model_garden.py")

# Resolve the variants: "name framework dtype xla steps" lines.
declare -a RUNS=()
IFS=',' read -r -a names <<< "$VARIANTS"
for name in "${names[@]}"; do
  spec="$name"; [ "$name" = ours-best ] && spec="ours-$OURS_BEST"
  IFS='-' read -r framework dtype xla extra <<< "$spec"
  case "$framework" in mg) framework=model_garden ;; ours) framework=mlm_garden ;;
    *) die "--variants: '$name': framework must be mg or ours" ;; esac
  case "$dtype" in float32|bfloat16|float16) ;;
    *) die "--variants: '$name': dtype must be float32, bfloat16 or float16 (found '$dtype')" ;; esac
  case "$xla" in xla) xla=true ;; '') xla=false ;;
    *) die "--variants: '$name': expected FRAMEWORK-DTYPE[-xla], found '$spec'" ;; esac
  [ -z "$extra" ] || die "--variants: '$name': expected FRAMEWORK-DTYPE[-xla], found '$spec'"
  if [ "$framework" = model_garden ] && [ "$xla" = true ]; then
    die "--variants: '$name': Model Garden applies runtime.enable_xla only with num_gpus > 0;" \
      "on CPU it would run without XLA"
  fi
  steps="$SPEED_STEPS"; [[ ",$FULL," == *",$name,"* || "$FULL" == all ]] && steps="$STEPS"
  RUNS+=("$name $framework $dtype $xla $steps")
done

# Model Garden's venv.
MG_VENV_REAL="$(realpath -m "$MG_VENV")"
[ "$MG_VENV_REAL" != "$(realpath -m "$REPO/.venv")" ] || die "--mg_venv must not be the project's .venv"
MG_VENV="$MG_VENV_REAL"; MG_PY="$MG_VENV/bin/python"
mg_python() { (cd "$WORK/mg-cwd" && env -u PYTHONPATH "$MG_PY" "$@"); }
if ! [ -x "$MG_PY" ] || ! mg_python -c 'import official.nlp.train' 2>/dev/null; then
  echo "== installing tf-models-official==$MG_VERSION into $MG_VENV (a few minutes)"
  python3 -m venv "$MG_VENV"
  "$MG_PY" -m pip install --quiet --upgrade pip
  "$MG_PY" -m pip install --quiet "tf-models-official==$MG_VERSION"
fi
MG_OFFICIAL="$(mg_python -c 'import official, os; print(os.path.dirname(official.__file__))' 2>/dev/null)"
[[ "$MG_OFFICIAL" == "$MG_VENV"/* ]] || \
  die "Model Garden's python imports 'official' from $MG_OFFICIAL, not from $MG_VENV"
versions() {  # python package...: "package version ..." as installed for that python
  local python="$1"; shift
  "$python" -c 'import sys, importlib.metadata as m; print(*(f"{p} {m.version(p)}" for p in sys.argv[1:]))' "$@"
}
VERSIONS="$(cd "$WORK/mg-cwd" && versions "$MG_PY" tf-models-official tensorflow tf-keras)"
VERSIONS+="; mlm-garden: $(versions "$PYTHON" tensorflow tf-keras)"
echo "== Model Garden: $VERSIONS"

# Shared TFRecords.
if ! [ -s "$DATA_DIR/train.tfrecord" ] || ! [ -s "$DATA_DIR/eval.tfrecord" ] || \
    ! [ -s "$DATA_DIR/vocab/vocab.txt" ]; then
  PYDOCS=/usr/share/doc/python3.11/html/_sources
  if [ "$CORPUS" != stdlib ] && ! [ -d "$PYDOCS" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== installing python3.11-doc (the corpus)"
    (apt-get install -y -qq python3.11-doc || (apt-get update -qq && apt-get install -y -qq python3.11-doc)) \
      >/dev/null 2>&1 || echo "   (apt-get failed; falling back to the standard library corpus)"
  fi
  if [ "$CORPUS" = pydocs ] || { [ "$CORPUS" = auto ] && [ -d "$PYDOCS" ]; }; then
    "$PYTHON" "$REPO/scripts/make_python_docs_corpus.py" --output_file="$DATA_DIR/corpus.txt"
    DUPE=5
  else
    "$PYTHON" -m data_tools.stdlib_corpus --output_file="$DATA_DIR/corpus.txt"
    DUPE=10
  fi
  "${HELPER[@]}" split "$DATA_DIR/corpus.txt" "$DATA_DIR"
  (cd "$REPO" && "$PYTHON" -m data_tools.build_vocab --input_file="$DATA_DIR/train.txt" \
    --output_dir="$DATA_DIR/vocab" --vocab_size=16000)
  for split in train eval; do
    dupe=$DUPE; [ $split = eval ] && dupe=3
    (cd "$REPO" && "$PYTHON" -m data_tools.create_pretraining_data --input_file="$DATA_DIR/$split.txt" \
      --output_file="$DATA_DIR/$split.tfrecord" --vocab_file="$DATA_DIR/vocab/vocab.txt" --do_whole_word_mask \
      --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=$dupe --random_seed=12345) 2>&1 | tail -2
  done
fi
VOCAB_SIZE=$(wc -l < "$DATA_DIR/vocab/vocab.txt")
NUM_TRAIN=$("$PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))['num_instances'])" \
  "$DATA_DIR/train.metadata.json" 2>/dev/null || echo '?')
echo "== data: $DATA_DIR (vocab $VOCAB_SIZE, $NUM_TRAIN training sequences; $STEPS steps x 32 = $((STEPS * 32)))"

# Per-framework base configs (the model YAML, minus keys a framework does not know).
write_run_config() {  # out_file train_steps dtype xla
  "${HELPER[@]}" write-config --out="$1" --train_path="$DATA_DIR/train.tfrecord" \
    --eval_path="$DATA_DIR/eval.tfrecord" --vocab_size="$VOCAB_SIZE" --train_steps="$2" \
    --schedule_steps="$STEPS" --steps_per_loop="$STEPS_PER_LOOP" --validation_steps="$VALIDATION_STEPS" \
    --precision="$3" --xla="$4"
}
write_run_config "$WORK/check_override.yaml" "$STEPS" float32 false
check_config() {  # framework out_var python...: strict load of BASE_CONFIG + overrides in that framework
  local framework="$1" out="$WORK/base_$1.yaml" log="$WORK/check_config_$1.log" result
  shift
  if ! result="$("$@" "$REPO/scripts/compare_model_garden.py" check-config "$BASE_CONFIG" \
      "$WORK/check_override.yaml" "$out" 2> "$log" | tail -1)"; then
    tail -5 "$log" >&2
    die "$framework cannot load $BASE_CONFIG with the run overrides (see $log)"
  fi
  grep '^dropped' "$log" >&2 || true
  echo "$result"
}
MG_BASE="$(check_config model_garden mg_python)"
OURS_BASE="$(cd "$REPO" && check_config mlm_garden "$PYTHON")"
echo "== config: Model Garden uses $MG_BASE, mlm-garden uses $OURS_BASE"
[ "$SETUP_ONLY" = 0 ] || { echo "== setup done"; exit 0; }

# Runs.
run_variant() {  # name framework dtype xla steps dir round
  local name="$1" framework="$2" dtype="$3" xla="$4" steps="$5" dir="$6" round="$7"
  local load_before start t0 base status wall load_after
  rm -rf "$dir"; mkdir -p "$dir"
  write_run_config "$dir/run.yaml" "$steps" "$dtype" "$xla"
  load_before="$(cut -d' ' -f1-3 /proc/loadavg)"; start="$(date -u +%FT%TZ)"; t0=$(date +%s)
  echo "== $name: $framework $dtype xla=$xla, $steps steps, round $round ($start, load $load_before) -> $dir/train.log"
  base="$OURS_BASE"; [ "$framework" = model_garden ] && base="$MG_BASE"
  local args=(-m official.nlp.train --experiment=bert/pretraining --mode=train_and_eval --model_dir="$dir/model"
              --config_file="$base" --config_file="$dir/run.yaml")
  status=0
  if [ "$framework" = model_garden ]; then
    mg_python "${args[@]}" > "$dir/train.log" 2>&1 || status=$?
  else
    (cd "$REPO" && "$PYTHON" "${args[@]}" > "$dir/train.log" 2>&1) || status=$?
  fi
  wall=$(( $(date +%s) - t0 )); load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
  if [ $status != 0 ]; then
    echo "   FAILED (exit $status); the end of $dir/train.log:"; tail -5 "$dir/train.log"
  fi
  cat > "$dir/variant.json" <<EOF
{"variant": "$name", "framework": "$framework", "dtype": "$dtype", "xla": $xla, "train_steps": $steps,
 "round": $round, "steps_per_loop": $STEPS_PER_LOOP, "validation_steps": $VALIDATION_STEPS, "batch_size": 32,
 "threads": $THREADS, "start": "$start", "wall_seconds": $wall, "loadavg_before": "$load_before",
 "loadavg_after": "$load_after", "exit_status": $status, "finished": $([ $status = 0 ] && echo true || echo false),
 "versions": "$VERSIONS"}
EOF
}

RUN_DIRS=()
for run in "${RUNS[@]}"; do
  read -r name framework dtype xla steps <<< "$run"
  dir="$WORK/runs/$name-$steps"
  RUN_DIRS+=("$dir")
  if [ "$REUSE" = 1 ] && [ -s "$dir/variant.json" ] && grep -q '"finished": true' "$dir/variant.json" && \
      grep -q "\"dtype\": \"$dtype\", \"xla\": $xla," "$dir/variant.json"; then
    echo "== $name: reusing $dir"; continue
  fi
  run_variant "$name" "$framework" "$dtype" "$xla" "$steps" "$dir" 0
done
# Speed rounds: every variant again for --speed_steps steps, in reverse order in odd rounds, so that a slow
# or fast stretch of this shared machine falls on both frameworks.
for ((round = 1; round <= SPEED_ROUNDS; round++)); do
  order=("${RUNS[@]}")
  if (( round % 2 == 1 )); then
    order=(); for ((i = ${#RUNS[@]} - 1; i >= 0; i--)); do order+=("${RUNS[$i]}"); done
  fi
  for run in "${order[@]}"; do
    read -r name framework dtype xla steps <<< "$run"
    dir="$WORK/runs/$name-speed$round"
    RUN_DIRS+=("$dir")
    run_variant "$name" "$framework" "$dtype" "$xla" "$SPEED_STEPS" "$dir" "$round"
  done
done

cat > "$WORK/settings.json" <<EOF
{"date": "$(date -u +%FT%TZ)", "steps": $STEPS, "speed_steps": $SPEED_STEPS, "speed_rounds": $SPEED_ROUNDS,
 "variants": "$VARIANTS",
 "full": "$FULL", "ours_best": "$OURS_BEST", "steps_per_loop": $STEPS_PER_LOOP,
 "validation_steps": $VALIDATION_STEPS, "batch_size": 32, "seq_length": 128, "max_predictions_per_seq": 20,
 "threads": $THREADS, "cores": $(nproc), "base_config": "$BASE_CONFIG", "config_model_garden": "$MG_BASE",
 "config_mlm_garden": "$OURS_BASE", "data_dir": "$DATA_DIR", "vocab_size": $VOCAB_SIZE,
 "train_sequences": "$NUM_TRAIN", "versions": "$VERSIONS"}
EOF
echo
echo "== results ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), $THREADS threads, $(nproc) cores)"
"${HELPER[@]}" summarize "${RUN_DIRS[@]}" --json="$WORK/results.json" --settings="$WORK/settings.json" \
  2> >(grep -v -E '^(WARNING: All log messages|[IW][0-9]{4} )' >&2 || true)
failed=()
for dir in "${RUN_DIRS[@]}"; do grep -q '"finished": true' "$dir/variant.json" || failed+=("$dir"); done
[ ${#failed[@]} = 0 ] || die "failed runs: ${failed[*]}"
