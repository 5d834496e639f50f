"""Tests for official/modeling/optimization/adamw.py: one or more steps against numpy."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling.optimization import adamw
from official.modeling.optimization import lr_schedule


def _np_adamw(w, grads, lr, wd, decay, b1=0.9, b2=0.999, eps=1e-7):
  """Adam with bias correction (epsilon on un-corrected sqrt(v)) plus `w -= lr * wd * w`."""
  m = np.zeros_like(w)
  v = np.zeros_like(w)
  for t, g in enumerate(grads, start=1):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    w = w - alpha * m / (np.sqrt(v) + eps) - (lr * wd * w if decay else 0.0)
  return w


def _variables():
  kernel = tf.Variable([[0.5, -1.0], [2.0, 0.25]], name='encoder/layer_0/intermediate/kernel')
  gamma = tf.Variable([1.5, -0.5], name='encoder/layer_0/output_layer_norm/gamma')
  bias = tf.Variable([0.3, -0.7], name='encoder/layer_0/intermediate/bias')
  return kernel, gamma, bias


def test_steps_match_numpy_with_decay_and_exclusions():
  kernel, gamma, bias = _variables()
  init = [v.numpy() for v in (kernel, gamma, bias)]
  rng = np.random.default_rng(0)
  grads = [[rng.normal(size=v.shape).astype(np.float32) * 0.1 for v in init] for _ in range(3)]
  opt = adamw.AdamWeightDecay(learning_rate=0.01, weight_decay_rate=0.1, gradient_clip_norm=0.0,
                              exclude_from_weight_decay=['LayerNorm', 'layer_norm', 'bias'])
  for step_grads in grads:
    opt.apply_gradients(zip([tf.constant(g) for g in step_grads], (kernel, gamma, bias)))
  for i, (var, decay) in enumerate(zip((kernel, gamma, bias), (True, False, False))):
    expected = _np_adamw(init[i], [g[i] for g in grads], 0.01, 0.1, decay)
    np.testing.assert_allclose(var.numpy(), expected, rtol=1e-5, atol=1e-7, err_msg=var.name)
  assert int(opt.iterations) == 3


def test_zero_gradient_only_decay_moves_the_kernel():
  kernel, gamma, bias = _variables()
  before = [v.numpy() for v in (kernel, gamma, bias)]
  opt = adamw.AdamWeightDecay(learning_rate=0.5, weight_decay_rate=0.1,
                              exclude_from_weight_decay=['LayerNorm', 'layer_norm', 'bias'])
  opt.apply_gradients([(tf.zeros_like(v), v) for v in (kernel, gamma, bias)])
  np.testing.assert_allclose(kernel.numpy(), before[0] * (1 - 0.5 * 0.1), rtol=1e-6)
  np.testing.assert_array_equal(gamma.numpy(), before[1])
  np.testing.assert_array_equal(bias.numpy(), before[2])


def test_include_overrides_exclude():
  kernel, gamma, bias = _variables()
  opt = adamw.AdamWeightDecay(learning_rate=1.0, weight_decay_rate=0.5,
                              include_in_weight_decay=['output_layer_norm'],
                              exclude_from_weight_decay=['layer_norm', 'bias'])
  gamma_before, bias_before = gamma.numpy(), bias.numpy()
  opt.apply_gradients([(tf.zeros_like(v), v) for v in (kernel, gamma, bias)])
  np.testing.assert_allclose(gamma.numpy(), gamma_before * 0.5)
  np.testing.assert_array_equal(bias.numpy(), bias_before)


def test_global_norm_clipping_default_one():
  w = tf.Variable([0.0, 0.0], name='w')
  u = tf.Variable([0.0], name='u')
  g_w, g_u = np.array([3.0, 0.0], np.float32), np.array([4.0], np.float32)  # global norm 5
  opt = adamw.AdamWeightDecay(learning_rate=1.0, beta_1=0.0, beta_2=0.0, epsilon=1e-7)
  captured = []
  opt_spy = adamw.AdamWeightDecay(learning_rate=1.0, gradient_transformers=[
      lambda gv: captured.append([g.numpy() for g, _ in gv]) or gv])
  opt.apply_gradients([(tf.constant(g_w), w), (tf.constant(g_u), u)])
  opt_spy.apply_gradients([(tf.constant(g_w), tf.Variable([0.0, 0.0])),
                           (tf.constant(g_u), tf.Variable([0.0]))])
  np.testing.assert_allclose(captured[0][0], g_w / 5.0, rtol=1e-6)
  np.testing.assert_allclose(captured[0][1], g_u / 5.0, rtol=1e-6)
  # With beta_1 = beta_2 = 0 the Adam step is lr * g / (|g| + eps): a sign step.
  np.testing.assert_allclose(w.numpy(), [-1.0, 0.0], atol=1e-6)


def test_smallest_of_gradient_clip_norm_and_global_clipnorm_wins():
  captured = []
  opt = adamw.AdamWeightDecay(learning_rate=0.1, gradient_clip_norm=2.0, global_clipnorm=0.5,
                              gradient_transformers=[lambda gv: captured.append(gv[0][0]) or gv])
  opt.apply_gradients([(tf.constant([3.0, 4.0]), tf.Variable([1.0, 1.0]))])
  np.testing.assert_allclose(captured[0].numpy(), [0.3, 0.4], rtol=1e-6)


def test_amsgrad_matches_numpy():
  w = tf.Variable([1.0, -2.0], name='w')
  grads = [np.array([1.0, 0.5], np.float32), np.array([0.1, 0.1], np.float32)]
  opt = adamw.AdamWeightDecay(learning_rate=0.1, amsgrad=True, gradient_clip_norm=None)
  for g in grads:
    opt.apply_gradients([(tf.constant(g), w)])
  m, v, v_hat, x = np.zeros(2), np.zeros(2), np.zeros(2), np.array([1.0, -2.0])
  for t, g in enumerate(grads, start=1):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    v_hat = np.maximum(v_hat, v)
    x = x - 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v_hat) + 1e-7)
  np.testing.assert_allclose(w.numpy(), x, rtol=1e-5)


def test_sparse_gradient_equals_dense():
  table_a = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2), name='emb')
  table_b = tf.Variable(table_a.numpy(), name='emb')
  ids = tf.constant([0, 2, 2])
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(tf.gather(table_a, ids) ** 2)
  sparse = tape.gradient(loss, table_a)
  assert isinstance(sparse, tf.IndexedSlices)
  for table, grad in ((table_a, sparse), (table_b, tf.convert_to_tensor(sparse))):
    adamw.AdamWeightDecay(0.1, weight_decay_rate=0.01).apply_gradients([(grad, table)])
  np.testing.assert_allclose(table_a.numpy(), table_b.numpy(), rtol=1e-6)


def test_xla_step_with_schedule_matches_eager():
  results = []
  for jit in (False, True):
    kernel, gamma, bias = _variables()
    variables = (kernel, gamma, bias)
    schedule = lr_schedule.PolynomialWarmUp(
        lr_schedule.PolynomialDecayWithOffset(0.1, decay_steps=10, end_learning_rate=0.0), 3)
    opt = adamw.AdamWeightDecay(schedule, weight_decay_rate=0.01,
                                exclude_from_weight_decay=['layer_norm', 'bias'])

    @tf.function(jit_compile=jit)
    def step():
      with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(kernel)) + tf.reduce_sum(gamma * bias)
      grads = tape.gradient(loss, variables)
      opt.apply_gradients(zip(grads, variables))  # pylint: disable=cell-var-from-loop

    for _ in range(4):
      step()
    results.append([v.numpy() for v in variables])
  for eager, compiled in zip(*results):
    np.testing.assert_allclose(compiled, eager, rtol=1e-5, atol=1e-7)


def test_checkpoint_restores_slots_and_iterations(tmp_path):
  def make():
    kernel, gamma, bias = _variables()
    return (kernel, gamma, bias), adamw.AdamWeightDecay(0.01, weight_decay_rate=0.01, amsgrad=True)

  def step(variables, opt):
    opt.apply_gradients([(tf.ones_like(v) * 0.3, v) for v in variables])

  variables, opt = make()
  step(variables, opt)
  step(variables, opt)
  path = tf.train.Checkpoint(optimizer=opt, variables=list(variables)).save(str(tmp_path / 'ckpt'))
  step(variables, opt)

  new_vars, new_opt = make()
  new_opt.build(list(new_vars))
  tf.train.Checkpoint(optimizer=new_opt, variables=list(new_vars)).restore(path).assert_consumed()
  assert int(new_opt.iterations) == 2
  step(new_vars, new_opt)
  assert int(new_opt.iterations) == 3
  for a, b in zip(variables, new_vars):
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6)


def test_config_round_trip():
  opt = adamw.AdamWeightDecay(
      lr_schedule.LinearWarmup(lr_schedule.CosineDecayWithOffset(1e-3, 100), 10),
      weight_decay_rate=0.01, exclude_from_weight_decay=['bias'], include_in_weight_decay=['x'],
      gradient_clip_norm=2.0, amsgrad=True, global_clipnorm=3.0)
  restored = tf_keras.optimizers.deserialize(tf_keras.optimizers.serialize(opt),
                                             use_legacy_optimizer=False)
  assert type(restored) is adamw.AdamWeightDecay
  config = opt.get_config()
  restored_config = restored.get_config()
  assert restored_config == config
  assert config['exclude_from_weight_decay'] == ['bias'] and config['gradient_clip_norm'] == 2.0


@pytest.mark.parametrize('kwargs', [dict(beta_1=1.0), dict(epsilon=0.0),
                                    dict(weight_decay_rate=-1.0), dict(gradient_clip_norm=-1.0),
                                    dict(exclude_from_weight_decay='bias'), dict(weight_decay=0.1)])
def test_bad_arguments_raise(kwargs):
  with pytest.raises(ValueError):
    adamw.AdamWeightDecay(0.1, **kwargs)


def _run_steps(opt, variables, grads, in_function):
  def apply(step_grads):
    opt.apply_gradients(zip(step_grads, variables))
  if in_function:
    apply = tf.function(apply)
  for step_grads in grads:
    apply([tf.constant(g) for g in step_grads])
  return [v.numpy() for v in variables]


@pytest.mark.parametrize('in_function', [False, True])
def test_one_kernel_update_matches_the_per_variable_update(in_function, monkeypatch):
  rng = np.random.default_rng(5)
  grads = [[rng.normal(size=s).astype(np.float32) for s in ((2, 2), (2,), (2,))] for _ in range(4)]
  results = []
  for fused in (True, False):
    kernel, gamma, bias = _variables()
    opt = adamw.AdamWeightDecay(learning_rate=0.05, weight_decay_rate=0.1, gradient_clip_norm=1.0,
                                exclude_from_weight_decay=['layer_norm', 'bias'])
    if not fused:
      monkeypatch.setattr(opt, '_single_replica_parts', lambda *args: None)
    results.append(_run_steps(opt, (kernel, gamma, bias), grads, in_function))
    assert bool(opt._apply_all_kernels) == fused
    if fused:  # one kernel, traced once for all steps
      (fused_kernel,) = opt._apply_all_kernels.values()
      assert fused_kernel.experimental_get_tracing_count() == 1
    assert int(opt.iterations) == 4
  for got, want in zip(*results):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)  # float32 rounding
