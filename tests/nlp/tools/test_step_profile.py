"""Tests for official/nlp/tools/step_profile.py: op categories, busy time, the text summary.

The end-to-end trace of a real train loop is tested with `mlm-benchmark --profile_steps`
(tests/scripts/test_benchmark.py).
"""

import pytest

from official.nlp.tools import step_profile as sp

STEP = 'while/body/_1/while/cond_1/then/_1095/while/cond_1/'
GRAD = 'while/body/_1/while/cond_1/then/_1095/gradient_tape/while/cond_1/'
LAYER = 'bert/bert_encoder/transformer/layer_2/'


@pytest.mark.parametrize('name, op_type, category', [
    # Names as TensorFlow 2.21 traces a bert_mini train loop (forward and backward).
    (STEP + 'bert/cls/predictions/MatMul', '_MklMatMul', sp.MATMUL_VOCAB),
    (GRAD + 'bert/cls/predictions/MatMul/MatMul_1', '_MklMatMul', sp.MATMUL_VOCAB),
    (STEP + 'bert/cls/predictions/transform/dense/Tensordot/MatMul', '_MklMatMul',
     sp.MATMUL_DENSE),
    (GRAD + LAYER + 'MatMul_1/MatMul_1', '_MklMatMul', sp.MATMUL_DENSE),
    (STEP + '' + LAYER + 'self_attention/BiasAdd_1', '_MklNativeFusedMatMul',
     sp.MATMUL_DENSE),
    (STEP + '' + LAYER + 'self_attention/MatMul_2', '_MklBatchMatMulV2',
     sp.MATMUL_ATTENTION),
    (STEP + '' + LAYER + 'intermediate_activation/PartitionedCall',
     'PartitionedCall', sp.FUSED),
    (GRAD + 'PartitionedCall_13', 'PartitionedCall', sp.FUSED),
    (STEP + 'AdamWeightDecay/StatefulPartitionedCall', 'StatefulPartitionedCall',
     sp.OPTIMIZER),
    (STEP + 'clip_by_global_norm/mul_1', 'Mul', sp.OPTIMIZER),
    (STEP + 'IteratorGetNext', 'IteratorGetNext', sp.INPUT),
    (STEP + 'Softmax', '_MklSoftmax', sp.VOCAB_LOSS),
    (STEP + 'ArgMax', 'ArgMax', sp.VOCAB_LOSS),
    (GRAD + 'TensorScatterSub', 'TensorScatterSub', sp.VOCAB_LOSS),
    (STEP + 'bert/cls/predictions/BiasAdd', 'BiasAdd', sp.VOCAB_LOSS),
    (STEP + '' + LAYER + 'Cast_4/Cast', 'Cast', sp.OTHER),
    (STEP + 'AddN_14', 'AddN', sp.OTHER),
])
def test_categories_of_traced_op_names(name, op_type, category):
  assert sp.categorize(name, op_type) == category


def _op(start, duration, thread='tf_Compute/1'):
  return sp.OpTime('n', 'Mul', thread, start, duration)


def test_busy_time_is_the_union_of_the_op_intervals():
  ops = [_op(0, 10), _op(5, 10, 'tf_Compute/2'), _op(12, 1), _op(30, 5), _op(31, 2)]
  assert sp.busy_ps(ops) == 15 + 5  # [0, 15) and [30, 35)
  assert sp.busy_ps([]) == 0


def test_wall_shares_split_overlaps_and_add_up_to_the_busy_time():
  ops = [sp.OpTime(STEP + 'bert/cls/predictions/MatMul', '_MklMatMul', 'a', 0, 20),
         sp.OpTime(STEP + 'Softmax', '_MklSoftmax', 'b', 10, 10),  # beside the matmul's second half
         sp.OpTime(STEP + 'Softmax_1', '_MklSoftmax', 'b', 30, 4)]  # alone, after a gap
  shares = sp.wall_shares(ops)
  assert shares[sp.MATMUL_VOCAB] == pytest.approx(15) and shares[sp.VOCAB_LOSS] == pytest.approx(9)
  assert sum(shares.values()) == pytest.approx(sp.busy_ps(ops)) == 24
  assert sp.wall_shares([]) == dict.fromkeys(sp.CATEGORIES, 0.0)


def test_summary_per_step_shares_and_idle_time():
  ops = [sp.OpTime(STEP + 'bert/cls/predictions/MatMul', '_MklMatMul', 't', 0, 6_000_000_000),
         sp.OpTime(STEP + 'Softmax', '_MklSoftmax', 't', 6_000_000_000, 2_000_000_000)]
  summary = sp.summarize(ops, num_steps=2, wall_seconds=0.010)  # 8 ms of ops in 10 ms
  assert summary['wall_ms_per_step'] == pytest.approx(5.0)
  assert summary['op_ms_per_step'] == pytest.approx(4.0)
  assert summary['idle_ms_per_step'] == pytest.approx(1.0)
  categories = summary['categories']
  assert categories[sp.MATMUL_VOCAB] == {'ms_per_step': pytest.approx(3.0), 'share': 0.75,
                                         'wall_ms_per_step': pytest.approx(3.0)}
  assert categories[sp.VOCAB_LOSS]['share'] == 0.25 and categories[sp.OTHER]['share'] == 0.0
  assert summary['top_ops'][0][:3] == ('bert/cls/predictions/MatMul', '_MklMatMul',
                                       sp.MATMUL_VOCAB)
  text = sp.format_summary(summary, 'bfloat16')
  assert text.startswith('bfloat16: 5.0 ms a step of wall time, 4.0 ms of op time')
  assert '1.0 ms with no op running' in text
  assert 'wall share' in text and '    3.0 ms   75.0%      3.0 ms' in text


def test_a_directory_without_a_trace_is_named(tmp_path):
  with pytest.raises(FileNotFoundError, match=str(tmp_path)):
    sp.read_trace(str(tmp_path))
