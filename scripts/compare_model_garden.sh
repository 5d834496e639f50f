#!/usr/bin/env bash
# Model Garden vs mlm-garden: the same YAML config and the same TFRecords through both frameworks'
# `official.nlp.train --experiment=bert/pretraining --mode=train_and_eval`, then a side-by-side
# table (and JSON) of median steps/s and the eval masked_lm_accuracy. Model Garden runs in a
# throwaway venv (--mg_venv, made when missing); about 40 minutes with the defaults on 2 cores.
#
# The comparison is official/benchmark/compare_model_garden.py (its docstring and --help say what
# it runs and prints); this wrapper runs it with the project's Python ($PYTHON, default .venv's)
# and turns down a misspelt flag before anything loads.
#
# Usage: scripts/compare_model_garden.sh [--steps=1000] [--speed_steps=300] [--speed_rounds=1]
#          [--variants=LIST] [--full=LIST] [--ours_best=bfloat16] [--steps_per_loop=50]
#          [--validation_steps=50] [--threads=N] [--work_dir=/tmp/mg-compare]
#          [--data_dir=WORK/data] [--mg_venv=/tmp/mg-venv] [--mg_version=2.20.0] [--corpus=auto]
#          [--setup_only] [--reuse]
# Output: WORK/runs/VARIANT-STEPS/ and WORK/runs/VARIANT-speedROUND/
# ({train.log,variant.json,model/}), WORK/settings.json, WORK/results.json, the table on stdout.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$REPO/.venv/bin/python}"
die() { echo "compare_model_garden: error: $*" >&2; exit 1; }
[ -x "$PYTHON" ] || die "mlm-garden's python $PYTHON not found (run 'make test' or set PYTHON)"

# The flags of `compare_model_garden.py run` (tests/test_docs.py reads these patterns).
for arg in "$@"; do
  case "$arg" in
    --steps=*|--speed_steps=*|--speed_rounds=*|--variants=*|--full=*|--ours_best=*) ;;
    --steps_per_loop=*|--validation_steps=*|--threads=*|--work_dir=*|--data_dir=*) ;;
    --mg_venv=*|--mg_version=*|--corpus=*|--setup_only|--reuse|-h|--help) ;;
    *) die "unknown argument '$arg' (see --help)" ;;
  esac
done
exec "$PYTHON" "$REPO/scripts/compare_model_garden.py" run "$@"
