#!/usr/bin/env bash
# Runs the tests whose numbers depend on the CPU's instruction set again, with TensorFlow capped to
# the CPU classes users have, so that one machine checks them all (`make test-cpu-classes`, which
# `.ci/run` runs after the suite):
#
#   avx2    an AVX2-only CPU (a Zen 3 EPYC, most laptops): TF_ENABLE_ONEDNN_OPTS=0 (TensorFlow then
#           runs bfloat16 matmuls and einsums on Eigen's kernels, as it does on a CPU without
#           AVX-512), ONEDNN_MAX_CPU_ISA=AVX2, XLA_FLAGS=--xla_cpu_max_isa=AVX2 (the fused kernels
#           compiled without AVX-512), MLM_CPU_FLAGS=avx2 (cpu_info, and so precision 'auto', reports
#           an AVX2-only CPU).
#   avx512  AVX-512 without bfloat16 units (Skylake to Ice Lake Xeons), on a CPU that has them:
#           ONEDNN_MAX_CPU_ISA=AVX512_CORE (oneDNN emulates bfloat16 in float32),
#           XLA_FLAGS=--xla_cpu_max_isa=AVX512, MLM_CPU_FLAGS=avx2,avx512f.
#
# What the caps cannot emulate: float32 matmuls in the avx2 leg run on Eigen, not on oneDNN's AVX2
# kernels (TensorFlow picks oneDNN for bfloat16 by `cpuid`, which no variable caps, and oneDNN
# capped to AVX2 aborts on a bfloat16 matmul; so oneDNN is off for the leg); the caches, core
# counts and speeds of those CPUs; AMX's own rounding (only on a CPU with AMX).
#
# Usage: scripts/test_cpu_classes.sh [pytest args...]   (PY=python to use another interpreter)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}

# The fused kernels, the bfloat16 sums, the encoder blocks, the losses and the precision choice.
FILES=(
  tests/modeling/test_fused_ops.py
  tests/modeling/test_bfloat16_bits.py
  tests/modeling/test_bfloat16_sums.py
  tests/modeling/test_tf_utils.py
  tests/modeling/test_performance.py
  tests/utils/misc/test_cpu_info.py
  tests/nlp/modeling/layers/test_transformer_encoder_block.py
  tests/nlp/modeling/layers/test_transformer_encoder_block_compat.py
  tests/nlp/modeling/layers/test_transformer_encoder_block_expansion.py
  tests/nlp/modeling/layers/test_self_attention.py
  tests/nlp/modeling/layers/test_block_sublayers.py
  tests/nlp/modeling/layers/test_fused_layer_norm.py
  tests/nlp/modeling/layers/test_efficient_attention.py
  tests/nlp/modeling/layers/test_masked_lm.py
  tests/nlp/modeling/layers/test_masked_lm_head.py
  tests/nlp/tasks/test_masked_lm.py::test_loss_is_weighted_mean_cross_entropy_plus_next_sentence
  tests/nlp/tasks/test_masked_lm.py::test_accuracy_from_the_losss_argmax_equals_the_keras_metric
  tests/nlp/tasks/test_masked_lm.py::test_bfloat16_loss_reads_the_heads_rows_and_bias_with_the_same_step
  tests/nlp/tasks/test_masked_lm.py::test_cross_entropy_with_argmax_falls_back_and_checks_shapes
  tests/nlp/tasks/test_masked_lm.py::test_xla_and_plain_train_steps_give_the_same_loss_and_update
)

has_flag() { grep -qw "$1" /proc/cpuinfo 2>/dev/null; }

run_leg() {
  local name=$1; shift
  echo "== CPU class ${name}: $*"
  env "$@" "$PY" -m pytest -q -n auto --dist loadfile "${FILES[@]}" "${PYTEST_ARGS[@]}"
}

PYTEST_ARGS=("$@")
run_leg avx2 TF_ENABLE_ONEDNN_OPTS=0 ONEDNN_MAX_CPU_ISA=AVX2 \
  XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_cpu_max_isa=AVX2" MLM_CPU_FLAGS=avx2
if has_flag avx512_bf16 || has_flag amx_bf16; then
  run_leg avx512 ONEDNN_MAX_CPU_ISA=AVX512_CORE \
    XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_cpu_max_isa=AVX512" MLM_CPU_FLAGS=avx2,avx512f
else
  echo "== CPU class avx512: skipped (this CPU has no bfloat16 units: the suite ran on its class)"
fi
