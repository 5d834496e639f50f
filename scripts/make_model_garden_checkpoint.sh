#!/usr/bin/env bash
# Regenerates tests/testdata/model_garden/pretraining/: a tiny checkpoint written by Model Garden's own
# `python -m official.nlp.train --experiment=bert/pretraining` (tf-models-official, in a throwaway venv), which
# tests/nlp/test_model_garden_checkpoints.py restores into mlm-garden (resume and fine-tuning init_checkpoint)
# and whose variable list is the reference for the keys mlm-garden writes.
#
# Steps: a 90-token vocabulary and a 12-document corpus (fixed, generated here), masked-LM TFRecords made with
# mlm-garden's data_tools.create_pretraining_data (seq 16, 3 predictions, NSP), then Model Garden trains
# tests/testdata/model_garden/pretraining.yaml for 3 steps (AdamW, so the checkpoint has m/v slots and `iter`).
# Model Garden runs from an empty directory with PYTHONPATH unset, so it imports its own `official` package.
# Kept: the last checkpoint (ckpt-3.index, ckpt-3.data-00000-of-00001), a `checkpoint` file naming only it, and
# Model Garden's params.yaml (about 330 KB in all). Training is not bit-reproducible, so the values change on
# every run; the tests read the expected values from the checkpoint itself.
#
# Usage: scripts/make_model_garden_checkpoint.sh [--mg_venv=/tmp/mg-venv] [--work_dir=/tmp/mg-ckpt]
#   (the venv needs tf-models-official 2.20, e.g. `python3 -m venv /tmp/mg-venv &&
#    /tmp/mg-venv/bin/pip install tf-models-official==2.20.0`; never install it into the project's .venv)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$REPO/.venv/bin/python}"
MG_VENV=/tmp/mg-venv
WORK=/tmp/mg-ckpt
for arg in "$@"; do
  case "$arg" in
    --mg_venv=*) MG_VENV="${arg#*=}" ;;
    --work_dir=*) WORK="${arg#*=}" ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "make_model_garden_checkpoint: unknown argument '$arg' (see --help)" >&2; exit 1 ;;
  esac
done
[ -x "$MG_VENV/bin/python" ] || { echo "make_model_garden_checkpoint: no venv at $MG_VENV (see --help)" >&2; exit 1; }
[ -x "$PYTHON" ] || { echo "make_model_garden_checkpoint: mlm-garden's python $PYTHON not found (make test)" >&2; exit 1; }
OUT="$REPO/tests/testdata/model_garden"
CONFIG="$OUT/pretraining.yaml"
rm -rf "$WORK"
mkdir -p "$WORK/mg-cwd"
WORK="$(cd "$WORK" && pwd)"
export TF_CPP_MIN_LOG_LEVEL=2

# A fixed vocabulary (the special tokens, 80 words, '.') and a seeded random corpus over it.
"$PYTHON" - "$WORK" <<'EOF'
import random, sys
work = sys.argv[1]
words = sorted(set(
    'the a of to and in is it that was for on are with as by at be this have from or one had not but what '
    'all were when we there can an your which their said if do will each about how up out them then she '
    'many some so these would other into has more her two like him see time could no make than first been '
    'its who now people my made over did down only way find use may water long little very after words '
    'called just where most know'.split()))[:80]
vocab = ['[PAD]'] + [f'[unused{i}]' for i in range(4)] + ['[UNK]', '[CLS]', '[SEP]', '[MASK]'] + words + ['.']
assert len(vocab) == 90
with open(f'{work}/vocab.txt', 'w') as f:
  f.write('\n'.join(vocab) + '\n')
rng = random.Random(0)
with open(f'{work}/corpus.txt', 'w') as f:
  for _ in range(12):
    for _ in range(6):
      f.write(' '.join(rng.choice(words) for _ in range(rng.randint(3, 7))) + ' .\n')
    f.write('\n')
EOF
(cd "$REPO" && "$PYTHON" -m data_tools.create_pretraining_data --input_file="$WORK/corpus.txt" \
  --output_file="$WORK/train.tfrecord" --vocab_file="$WORK/vocab.txt" --max_seq_length=16 \
  --max_predictions_per_seq=3 --dupe_factor=2 --num_workers=1 --random_seed=1)

# Model Garden trains 3 steps from an empty directory, with its own `official` package.
(cd "$WORK/mg-cwd" && env -u PYTHONPATH "$MG_VENV/bin/python" -m official.nlp.train \
  --experiment=bert/pretraining --mode=train --model_dir="$WORK/mg_model" --config_file="$CONFIG" \
  --params_override="task.train_data.input_path=$WORK/train.tfrecord,task.validation_data.input_path=$WORK/train.tfrecord" \
  > "$WORK/mg_train.log" 2>&1) || { tail -30 "$WORK/mg_train.log" >&2; exit 1; }

rm -rf "$OUT/pretraining"
mkdir -p "$OUT/pretraining"
cp "$WORK/mg_model/ckpt-3.index" "$WORK/mg_model/ckpt-3.data-00000-of-00001" "$WORK/mg_model/params.yaml" \
  "$OUT/pretraining/"
printf 'model_checkpoint_path: "ckpt-3"\nall_model_checkpoint_paths: "ckpt-3"\n' > "$OUT/pretraining/checkpoint"
MG_VERSION="$("$MG_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("tf-models-official"))')"
TF_VERSION="$("$MG_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("tensorflow"))')"
echo "tf-models-official $MG_VERSION, tensorflow $TF_VERSION, $(date -u +%Y-%m-%d)" > "$OUT/pretraining/VERSION"
du -sh "$OUT/pretraining"
echo "wrote $OUT/pretraining (Model Garden log: $WORK/mg_train.log)"
