#!/usr/bin/env bash
# Pretrains BERT-mini on the Python documentation (Debian's python3.11-doc) and reports the eval MLM accuracy.
#   apt-get install python3.11-doc   # once
#   scripts/pretrain_python_docs.sh [work_dir] [train_steps]
# Steps: corpus (one sentence a line) -> 95/5 document split -> WordPiece vocab (16k) -> TFRecords (seq 128,
# 20 predictions, whole-word masking, dupe_factor 5) -> train_and_eval of configs/pretraining/bert_mini.yaml
# with batch 32 -> the last eval's masked_lm_accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${1:-/tmp/python_docs_run}
STEPS=${2:-1000}
PY=${PYTHON:-.venv/bin/python}
mkdir -p "$WORK"
[ -s "$WORK/corpus.txt" ] || $PY scripts/make_python_docs_corpus.py --output_file="$WORK/corpus.txt"
$PY - "$WORK" <<'PYEOF'
import sys
work = sys.argv[1]
docs = [d for d in open(f'{work}/corpus.txt', encoding='utf-8').read().split('\n\n') if d.strip()]
with open(f'{work}/train.txt', 'w', encoding='utf-8') as f:
  f.write('\n\n'.join(d for i, d in enumerate(docs) if i % 20) + '\n')
with open(f'{work}/eval.txt', 'w', encoding='utf-8') as f:
  f.write('\n\n'.join(d for i, d in enumerate(docs) if not i % 20) + '\n')
print(f'{len(docs)} documents')
PYEOF
[ -s "$WORK/vocab/vocab.txt" ] || $PY -m data_tools.build_vocab --input_file="$WORK/train.txt" \
  --output_dir="$WORK/vocab" --vocab_size=16000
VOCAB_SIZE=$(wc -l < "$WORK/vocab/vocab.txt")
for split in train eval; do
  dupe=5; [ $split = eval ] && dupe=1
  [ -s "$WORK/data/$split.tfrecord" ] || $PY -m data_tools.create_pretraining_data \
    --input_file="$WORK/$split.txt" --output_file="$WORK/data/$split.tfrecord" \
    --vocab_file="$WORK/vocab/vocab.txt" --do_whole_word_mask --max_seq_length=128 \
    --max_predictions_per_seq=20 --dupe_factor=$dupe
done
rm -rf "$WORK/model"
$PY -m official.nlp.train --experiment=bert/pretraining --config_file=configs/pretraining/bert_mini.yaml \
  --mode=train_and_eval --model_dir="$WORK/model" --params_override="$(echo \
  task.model.encoder.bert.vocab_size=$VOCAB_SIZE,\
task.train_data.input_path=$WORK/data/train.tfrecord,task.validation_data.input_path=$WORK/data/eval.tfrecord,\
task.train_data.seq_length=128,task.validation_data.seq_length=128,\
task.train_data.max_predictions_per_seq=20,task.validation_data.max_predictions_per_seq=20,\
task.train_data.global_batch_size=32,task.validation_data.global_batch_size=32,\
trainer.train_steps=$STEPS,trainer.steps_per_loop=100,trainer.summary_interval=100,\
trainer.checkpoint_interval=$STEPS,trainer.validation_interval=$STEPS,trainer.validation_steps=100,\
trainer.optimizer_config.learning_rate.polynomial.initial_learning_rate=5e-4,\
trainer.optimizer_config.learning_rate.polynomial.decay_steps=$STEPS,\
trainer.optimizer_config.warmup.polynomial.warmup_steps=$((STEPS / 10)),\
runtime.distribution_strategy=one_device)" 2>&1 | grep -E '^(step|eval|error)'
