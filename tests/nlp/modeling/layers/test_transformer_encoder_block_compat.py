"""TransformerEncoderBlock against a fixture its earlier code wrote (tests/testdata/encoder_block).

For every attention path (fused, Keras, efficient; float32 and mixed_bfloat16), the block's
subclasses and the encoders built on it (`encoder_block_fixtures.CASES`): the same variables in
the same Keras order, the same config, the same checkpoint keys; the old checkpoint restores and
the outputs, dropout outputs and gradients are those the old code computed.
"""

import json
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from tests.nlp.modeling.layers import encoder_block_fixtures as fixtures

FIXTURE = pathlib.Path(__file__).resolve().parents[3] / 'testdata' / 'encoder_block'
# bfloat16 roundings along the longest chain of a block's forward and backward pass (see below).
_BFLOAT16_ROUNDINGS = 16


@pytest.fixture(scope='module')
def stored():
  with open(FIXTURE / 'layout.json') as f:
    layouts = json.load(f)['cases']
  with np.load(FIXTURE / 'outputs.npz') as data:
    outputs = dict(data)
  return layouts, outputs


def test_every_case_is_in_the_fixture(stored):
  layouts, _ = stored
  assert sorted(layouts) == sorted(fixtures.CASES)


@pytest.mark.slow
@pytest.mark.parametrize('name', sorted(fixtures.CASES))
def test_variables_checkpoint_and_numbers_match_the_old_block(name, stored, tmp_path):
  layouts, expected_outputs = stored
  layer, args, kwargs = fixtures.build(name)
  layout = fixtures.layout(layer)
  assert layout['weights'] == layouts[name]['weights']  # names, shapes and Keras' order
  assert layout['config'] == layouts[name]['config']
  for v in layer.weights:  # the numbers below come from the old checkpoint, not from `build`
    v.assign(tf.zeros_like(v))
  checkpoint = tf.train.Checkpoint(**{name: layer})
  checkpoint.read(str(FIXTURE / 'blocks')).expect_partial().assert_existing_objects_matched()
  assert fixtures.checkpoint_keys(checkpoint.write(str(tmp_path / 'new')), name) == (
      layouts[name]['checkpoint'])

  got = fixtures.outputs(name, layer, args, kwargs)
  expected = {key[len(name) + 1:]: value for key, value in expected_outputs.items()
              if key.startswith(f'{name}/')}
  assert sorted(got) == sorted(expected)
  bfloat16 = fixtures.CASES[name].policy == 'mixed_bfloat16'
  truth = _float32_outputs(name) if bfloat16 else None
  for key, value in expected.items():
    scale = max(1.0, float(np.abs(value).max()))
    if not bfloat16:  # identical on the machine that wrote the fixture; other CPUs may round
      np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-5 * scale,
                                 err_msg=f'{name} {key}')
      continue
    # A bfloat16 result against the float32 one: a first-order bound of the rounding error. Sums
    # are float32 on every CPU (oneDNN, or `bfloat16_sums` where TensorFlow runs Eigen's
    # kernels); each bfloat16 tensor stored on the way rounds by at most 2^-8 relative
    # (Eigen's matmuls truncate; 2^-9 to nearest elsewhere), of at most the case's largest
    # magnitude, and the longest chain through a block's forward and backward pass stores about
    # 16 of them (projections, scores, probabilities, context, output, norm, two feed-forward
    # matmuls and the activation each way). The fixture (an earlier code on another CPU) is
    # within the same bound of the same float32 value, so the two differ by at most twice it.
    # The dropout outputs ('train') draw other masks in float32 and are compared with the
    # fixture only.
    bound = _BFLOAT16_ROUNDINGS * 2.0 ** -8 * scale
    np.testing.assert_allclose(got[key], value, rtol=0, atol=2 * bound, err_msg=f'{name} {key}')
    if not key.startswith('train'):
      np.testing.assert_allclose(got[key], truth[key], rtol=0, atol=bound,
                                 err_msg=f'{name} {key} against float32')


def _float32_outputs(name):
  """The outputs of case `name` (a bfloat16 case) computed in float32 from the same checkpoint."""
  layer, args, kwargs = fixtures.build(name, policy='float32')
  tf.train.Checkpoint(**{name: layer}).read(str(FIXTURE / 'blocks')).expect_partial()
  return fixtures.outputs(name, layer, args, kwargs, policy='float32')
