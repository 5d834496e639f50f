"""Tests for official/modeling/optimization/lr_schedule.py: values checked against hand
computation."""

import math

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling.optimization import lr_schedule


def _poly(**kwargs):
  defaults = dict(initial_learning_rate=1.0, decay_steps=10, end_learning_rate=0.0, power=1.0)
  return lr_schedule.PolynomialDecayWithOffset(**dict(defaults, **kwargs))


# (schedule factory, {step: expected learning rate}) computed by hand.
_CASES = {
    'polynomial_power2': (
        lambda: _poly(end_learning_rate=0.1, power=2.0),
        {0: 1.0, 1: 0.9 * 0.81 + 0.1, 5: 0.9 * 0.25 + 0.1, 10: 0.1, 20: 0.1}),
    'polynomial_offset': (
        lambda: _poly(end_learning_rate=0.1, power=2.0, offset=4),
        {0: 1.0, 4: 1.0, 9: 0.325, 14: 0.1, 30: 0.1}),
    'polynomial_cycle': (
        lambda: _poly(cycle=True),
        {0: 1.0, 5: 0.5, 10: 0.0, 15: 0.25, 20: 0.0, 25: 1 / 6}),
    'cosine_offset': (
        lambda: lr_schedule.CosineDecayWithOffset(2.0, decay_steps=10, alpha=0.1, offset=2),
        {0: 2.0, 2: 2.0, 3: 2.0 * (0.9 * 0.5 * (1 + math.cos(math.pi / 10)) + 0.1),
         7: 2.0 * (0.9 * 0.5 + 0.1), 12: 0.2, 20: 0.2}),
    'stepwise_offset': (
        lambda: lr_schedule.PiecewiseConstantDecayWithOffset([3, 6], [1.0, 0.5, 0.1], offset=1),
        {0: 1.0, 4: 1.0, 5: 0.5, 7: 0.5, 8: 0.1, 100: 0.1}),
    # Linear warmup from 0.1 to after(4) = 0.6 over 4 steps, then the decay counted from step 0.
    'linear_warmup': (
        lambda: lr_schedule.LinearWarmup(_poly(), warmup_steps=4, warmup_learning_rate=0.1),
        {0: 0.1, 1: 0.225, 2: 0.35, 3: 0.475, 4: 0.6, 5: 0.5, 10: 0.0, 12: 0.0}),
    # Polynomial warmup: after(4) * (max(step, 1) / 4) ** 2.
    'polynomial_warmup': (
        lambda: lr_schedule.PolynomialWarmUp(_poly(), warmup_steps=4, power=2.0),
        {0: 0.0375, 1: 0.0375, 2: 0.15, 3: 0.3375, 4: 0.6, 8: 0.2, 11: 0.0}),
    'linear_warmup_of_constant': (
        lambda: lr_schedule.LinearWarmup(0.1, warmup_steps=10),
        {0: 0.0, 5: 0.05, 10: 0.1, 50: 0.1}),
    'polynomial_warmup_zero_steps': (
        lambda: lr_schedule.PolynomialWarmUp(_poly(), warmup_steps=0),
        {0: 1.0, 5: 0.5}),
    # 0.1 * 0.5 ** floor((step - 2) / 10), held at 0.1 before the offset.
    'exponential_staircase_offset': (
        lambda: lr_schedule.ExponentialDecayWithOffset(0.1, 10, 0.5, staircase=True, offset=2),
        {0: 0.1, 2: 0.1, 11: 0.1, 12: 0.05, 31: 0.025}),
    'exponential_smooth': (
        lambda: lr_schedule.ExponentialDecayWithOffset(1.0, 10, 0.5),
        {0: 1.0, 5: 0.5 ** 0.5, 20: 0.25}),
    'direct_power': (
        lambda: lr_schedule.DirectPowerDecay(2.0, power=-0.5),
        {0: 2.0, 1: 2.0, 4: 1.0, 16: 0.5}),
    # 1 * max(s, 1) ** -1 * min(1, (100 - s) / 50) with s = step - 10, never below 0.
    'power_and_linear': (
        lambda: lr_schedule.PowerAndLinearDecay(1.0, 100, power=-1.0, linear_decay_fraction=0.5,
                                                offset=10),
        {0: 1.0, 11: 1.0, 50: 1 / 40, 70: 1 / 60 * 0.8, 110: 0.0, 150: 0.0}),
    'power_and_linear_without_ramp': (
        lambda: lr_schedule.PowerAndLinearDecay(1.0, 100, power=-1.0, linear_decay_fraction=0.0),
        {2: 0.5, 200: 1 / 200}),
    'power_with_offset': (
        lambda: lr_schedule.PowerDecayWithOffset(1.0, power=-1.0, offset=10,
                                                 pre_offset_learning_rate=3.0),
        {0: 3.0, 10: 3.0, 11: 1.0, 20: 0.1, 50: 1 / 40}),
    # Cosine from 1.0 at step 0 to 0.5 at 100, then to 0.1 at 300, then 0.1; offset 10.
    'step_cosine_offset': (
        lambda: lr_schedule.StepCosineDecayWithOffset([0, 100, 300], [1.0, 0.5, 0.1], offset=10),
        {0: 1.0, 10: 1.0, 60: 0.75, 110: 0.5, 210: 0.3, 310: 0.1, 1000: 0.1}),
}


@pytest.mark.parametrize('cls, kwargs', [
    (lr_schedule.PolynomialDecayWithOffset, dict(initial_learning_rate=1.0, decay_steps=100)),
    (lr_schedule.CosineDecayWithOffset, dict(initial_learning_rate=1.0, decay_steps=100)),
    (lr_schedule.ExponentialDecayWithOffset,
     dict(initial_learning_rate=1.0, decay_steps=100, decay_rate=0.5)),
    (lr_schedule.PiecewiseConstantDecayWithOffset,
     dict(boundaries=[50, 80], values=[1.0, 0.5, 0.1])),
])
def test_offset_schedules_equal_their_keras_base_shifted(cls, kwargs):
  shifted = cls(offset=10, **kwargs)
  base = cls.base_lr_class(**kwargs)
  assert isinstance(shifted, cls.base_lr_class)
  for step in range(10, 121, 10):
    assert float(shifted(step)) == float(base(step - 10))
  assert float(shifted(3)) == float(base(0))  # held at the step-0 value before the offset


@pytest.mark.parametrize('case', sorted(_CASES))
@pytest.mark.parametrize('step_type', ['python', tf.int32, tf.int64, tf.float32])
def test_schedule_values(case, step_type):
  make, expected = _CASES[case]
  schedule = make()
  for step, value in expected.items():
    s = step if step_type == 'python' else tf.constant(step, step_type)
    lr = schedule(s)
    assert lr.dtype == tf.float32
    np.testing.assert_allclose(float(lr), value, rtol=1e-5, atol=1e-7,
                               err_msg=f'{case} step {step}')


@pytest.mark.parametrize('case', sorted(_CASES))
def test_schedule_under_xla_matches_eager(case):
  make, expected = _CASES[case]
  schedule = make()
  step = tf.Variable(0, dtype=tf.int64)
  compiled = tf.function(lambda: schedule(step), jit_compile=True)
  for s, value in expected.items():
    step.assign(s)
    np.testing.assert_allclose(float(compiled()), value, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize('case', sorted(_CASES))
def test_serialization_round_trip(case):
  schedule = _CASES[case][0]()
  restored = tf_keras.optimizers.schedules.deserialize(
      tf_keras.optimizers.schedules.serialize(schedule))
  assert type(restored) is type(schedule)
  assert restored.get_config() == schedule.get_config()
  for step in _CASES[case][1]:
    assert float(restored(step)) == float(schedule(step))


@pytest.mark.parametrize('make', [
    lambda: _poly(decay_steps=0),
    lambda: lr_schedule.CosineDecayWithOffset(1.0, decay_steps=-1),
    lambda: lr_schedule.PiecewiseConstantDecayWithOffset([1, 2], [1.0]),
    lambda: lr_schedule.LinearWarmup(0.1, warmup_steps=-1),
    lambda: lr_schedule.ExponentialDecayWithOffset(1.0, decay_steps=10, decay_rate=None),
    lambda: lr_schedule.DirectPowerDecay(None),
    lambda: lr_schedule.PowerAndLinearDecay(1.0, None),
    lambda: lr_schedule.StepCosineDecayWithOffset([0, 10], [1.0]),
    lambda: lr_schedule.StepCosineDecayWithOffset([10, 0], [1.0, 0.5]),
])
def test_bad_arguments_raise(make):
  with pytest.raises(ValueError):
    make()
