"""The element-wise blocks of a transformer layer, each one XLA kernel with a hand-written gradient.

TensorFlow runs every element-wise op as its own pass over memory, and its gradient as several
more: in a BERT training step on CPU the GELU, dropout, residual-add, LayerNorm and softmax ops
took more time than all the matmuls under bfloat16. Here each block is compiled by XLA into one
fused loop forward and one backward, which recomputes what it needs from the inputs and a few
float32 row statistics the forward pass keeps (LayerNorm's mean and 1/std, softmax's log-sum-exp)
instead of keeping full-size intermediates. The matmuls stay outside XLA (oneDNN on CPU, which
XLA:CPU does not match for bfloat16), and so do column sums (LayerNorm's parameter gradients are
taken as a ones-vector matmul: XLA:CPU reduces long columns slowly). Inside an XLA-compiled step
(GPU/TPU) the kernels are inlined like any other function.

Numerics: everything is computed in float32 and the results are cast to the input dtype, so
bfloat16/float16 inputs get float32 LayerNorm statistics and a float32 softmax.

Dropout draws its mask inside the kernels from a counter-based hash: element i of a call with
seed (s0, s1) is kept when murmur3's 32-bit finalizer of `(i * 0x9E3779B9 + s0) ^ s1` is >=
`keep_threshold(rate)` = round(rate * 2**32), so with probability `1 - rate` (within 2**-32). The
seed is two random uint32 drawn per call (`dropout_seed`, from a `tf.random.Generator` whose state
can be checkpointed, or from TensorFlow's RNG); a backward pass that needs the mask recomputes it
from the seed (the softmax's backward pass needs none: it differentiates through its own output).
Nothing is drawn or stored per element: on CPU this is about 3x cheaper than TensorFlow's random
ops for the attention-probability dropout of BERT, and the hash fuses with the neighbouring math.

Example:
  >>> x = tf.constant([[-1.0, 0.0, 2.0]])
  >>> gelu(x).numpy().round(4)
  array([[-0.1588,  0.    ,  1.9546]], dtype=float32)
"""

import functools
import math
from typing import Optional, Tuple

import tensorflow as tf

from official.modeling import bfloat16_bits
from official.modeling import tf_utils

_TANH_C = math.sqrt(2.0 / math.pi)
_TANH_A = 0.044715
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_UINT32_RANGE = 2 ** 32
# Inside the kernels: `tf.cast` with bfloat16 converts that XLA:CPU vectorizes (`bfloat16_bits`).
_cast = bfloat16_bits.cast


def keep_threshold(rate: float) -> int:
  """The 32-bit threshold of dropout `rate`: an element is kept when its hash is >= it."""
  if not 0.0 <= rate < 1.0:
    raise ValueError(f'dropout rate must be in [0, 1), found {rate}')
  return min(int(round(rate * _UINT32_RANGE)), _UINT32_RANGE - 1)


def dropout_seed(generator: Optional[tf.random.Generator] = None, seed=None,
                 op_seed: Optional[int] = None) -> tf.Tensor:
  """A fresh uint32 [2] seed for one dropout call.

  Args:
    generator: draw from this `tf.random.Generator` (its state advances; checkpointable).
    seed: with no generator, a [2] int seed of a stateless draw.
    op_seed: with neither, the op seed of a draw from TensorFlow's stateful RNG (None: unseeded).

  Example:
    >>> dropout_seed(seed=[1, 2]).dtype
    tf.uint32
  """
  if generator is not None:
    return generator.uniform_full_int([2], tf.uint32)
  if seed is None:
    seed = tf.random.uniform([2], maxval=tf.int64.max, dtype=tf.int64, seed=op_seed)
  return tf.random.stateless_uniform([2], seed, minval=None, maxval=None, dtype=tf.uint32)


def _hash32(x):
  """murmur3's 32-bit finalizer (uint32 -> uint32, a bijection with full avalanche)."""
  shift = lambda v, n: tf.bitwise.right_shift(v, tf.constant(n, tf.uint32))
  x = tf.bitwise.bitwise_xor(x, shift(x, 16)) * tf.constant(0x85EBCA6B, tf.uint32)
  x = tf.bitwise.bitwise_xor(x, shift(x, 13)) * tf.constant(0xC2B2AE35, tf.uint32)
  return tf.bitwise.bitwise_xor(x, shift(x, 16))


def keep_mask(shape, seed: tf.Tensor, rate: float) -> tf.Tensor:
  """bool mask of `shape`: True (kept) with probability 1 - rate, a pure function of `seed`.

  Args:
    shape: the masked tensor's shape.
    seed: uint32 [2] from `dropout_seed`.
    rate: the dropout rate.

  Example:
    >>> mask = keep_mask([1000], tf.constant([1, 2], tf.uint32), 0.25)
    >>> 0.7 < float(tf.reduce_mean(tf.cast(mask, tf.float32))) < 0.8
    True
  """
  shape = tf.convert_to_tensor(shape, tf.int32)
  index = tf.bitcast(tf.reshape(tf.range(tf.reduce_prod(shape)), shape), tf.uint32)
  seed = tf.cast(seed, tf.uint32)
  mixed = tf.bitwise.bitwise_xor(index * tf.constant(0x9E3779B9, tf.uint32) + seed[0], seed[1])
  return _hash32(mixed) >= tf.constant(keep_threshold(rate), tf.uint32)


def _xla(fn):
  """`fn` as an XLA-compiled function (one compilation per input signature)."""
  return tf.function(fn, jit_compile=True, autograph=False)


def _fold(x, combine):
  """x with its last axis folded in halves (combine(first half, second half)) down to 32 wide.

  XLA:CPU splits a reduction over more than 32 elements into a windowed pre-reduction that it does
  not fuse with the producers (its 'tree reduction' rewrite); the folded form stays one fused loop.
  """
  width = x.shape[-1]
  while width is not None and width > 32 and width % 2 == 0:
    width //= 2
    x = combine(x[..., :width], x[..., width:])
  return x


def _row_sum(x):
  """Sum over the last axis (keepdims), folded first (see `_fold`)."""
  return tf.reduce_sum(_fold(x, tf.add), axis=-1, keepdims=True)


def _row_max(x):
  """Max over the last axis (keepdims), folded first (see `_fold`)."""
  return tf.reduce_max(_fold(x, tf.maximum), axis=-1, keepdims=True)


def _keep_scale(shape, seed, rate: float):
  """float32 keep mask scaled by 1 / (1 - rate), or None without dropout."""
  if seed is None or rate == 0.0:
    return None
  return tf.where(keep_mask(shape, seed, rate), tf.constant(1.0 / (1.0 - rate)), tf.constant(0.0))


def _unary(forward, backward, x):
  """forward(x) whose gradient is backward(x, dy): a kernel each way, nothing kept but `x`."""

  @tf.custom_gradient
  def _fused(x):
    return forward(x), lambda dy: backward(x, dy)

  return _fused(x)


# ---- GELU ------------------------------------------------------------------------------------
def _gelu_forward(x, approximate: bool):
  xf = _cast(x, tf.float32)
  if approximate:
    y = 0.5 * xf * (1.0 + tf.tanh(_TANH_C * xf * (1.0 + _TANH_A * xf * xf)))
  else:
    y = 0.5 * xf * (1.0 + tf.math.erf(xf * _SQRT_HALF))
  return _cast(y, x.dtype)


def _gelu_backward(x, dy, approximate: bool):
  xf = _cast(x, tf.float32)
  if approximate:
    x2 = xf * xf
    t = tf.tanh(_TANH_C * xf * (1.0 + _TANH_A * x2))
    slope = 0.5 * (1.0 + t) + 0.5 * xf * (1.0 - t * t) * _TANH_C * (1.0 + 3.0 * _TANH_A * x2)
  else:
    slope = (0.5 * (1.0 + tf.math.erf(xf * _SQRT_HALF))
             + xf * _INV_SQRT_2PI * tf.exp(-0.5 * xf * xf))
  return _cast(_cast(dy, tf.float32) * slope, x.dtype)


_GELU_FORWARD = {a: _xla(functools.partial(_gelu_forward, approximate=a)) for a in (True, False)}
_GELU_BACKWARD = {a: _xla(functools.partial(_gelu_backward, approximate=a)) for a in (True, False)}


def gelu(x: tf.Tensor, approximate: bool = True) -> tf.Tensor:
  """GELU (tanh approximation by default, else erf) as one fused kernel each way.

  Same values as `tf.nn.gelu(x, approximate)` up to float rounding (computed in float32).

  Args:
    x: any shape, any float dtype.
    approximate: tanh approximation (BERT's 'gelu') or the exact erf form.

  Returns:
    GELU(x), shape and dtype of x.
  """
  return _unary(_GELU_FORWARD[approximate], _GELU_BACKWARD[approximate], x)


# ---- GeGLU -------------------------------------------------------------------------------------
def _gated_gelu_forward(inner, gate, approximate: bool):
  product = _gelu_forward(_cast(inner, tf.float32), approximate) * _cast(gate, tf.float32)
  return _cast(product, inner.dtype)


def _gated_gelu_backward(inner, gate, dy, approximate: bool):
  inner_f, gate_f, dy = _cast(inner, tf.float32), _cast(gate, tf.float32), _cast(dy, tf.float32)
  d_inner = _gelu_backward(inner_f, dy * gate_f, approximate)
  d_gate = dy * _gelu_forward(inner_f, approximate)
  return _cast(d_inner, inner.dtype), _cast(d_gate, gate.dtype)


_GATED_GELU_FORWARD = {a: _xla(functools.partial(_gated_gelu_forward, approximate=a))
                       for a in (True, False)}
_GATED_GELU_BACKWARD = {a: _xla(functools.partial(_gated_gelu_backward, approximate=a))
                        for a in (True, False)}


def gated_gelu(inner: tf.Tensor, gate: tf.Tensor, approximate: bool = False) -> tf.Tensor:
  """GELU(inner) * gate as one fused kernel each way (ModernBERT's gated feed-forward).

  Computed in float32; the backward pass recomputes from the inputs and writes the two gradients
  as two tensors. Joined into one [..., 2 * width] tensor inside the kernel they took XLA:CPU
  about 1.9x as long ([4096, 1344] bfloat16: 5.1 ms against 2.7 ms on 2 cores of an AMD EPYC):
  feed it from two matmuls against the two halves of one kernel rather than splitting one
  output (`geglu`).

  Args:
    inner, gate: [..., width], the same shape and float dtype.
    approximate: tanh GELU, or the exact erf form (ModernBERT's).

  Returns:
    [..., width] in the dtype of `inner`.

  Example:
    >>> gated_gelu(tf.constant([[1.0]]), tf.constant([[2.0]])).numpy().round(4)
    array([[1.6827]], dtype=float32)
  """
  if inner.shape.is_fully_defined() and gate.shape.is_fully_defined() and inner.shape != gate.shape:
    raise ValueError(f'gated_gelu: inner and gate must have one shape, found {inner.shape} and '
                     f'{gate.shape}')
  forward, backward = _GATED_GELU_FORWARD[approximate], _GATED_GELU_BACKWARD[approximate]

  @tf.custom_gradient
  def _fused(inner, gate):
    return forward(inner, gate), lambda dy: backward(inner, gate, dy)

  return _fused(inner, gate)


def geglu(x: tf.Tensor, approximate: bool = False) -> tf.Tensor:
  """GELU(first half of the last axis) * second half: `gated_gelu` of the two halves.

  Hugging Face's `input, gate = x.chunk(2)`, `act(input) * gate`, computed in float32.

  Args:
    x: [..., 2 * width], any float dtype.
    approximate: the tanh GELU, or the exact erf form (ModernBERT's).

  Returns:
    [..., width] in the dtype of `x`.

  Example:
    >>> geglu(tf.constant([[1.0, 2.0]])).numpy().round(4)
    array([[1.6827]], dtype=float32)
  """
  width = x.shape[-1]
  if width is not None and width % 2:
    raise ValueError(f'geglu needs an even last axis (input and gate halves), found shape '
                     f'{x.shape}')
  return gated_gelu(*tf.split(x, 2, axis=-1), approximate=approximate)


# ---- rotary position embeddings ------------------------------------------------------------
def _rotate_half(x, sign: float):
  """[x1, x2] -> [-x2, x1] (sign 1) or its transpose [x2, -x1] (sign -1), on the last axis."""
  first, second = tf.split(x, 2, axis=-1)
  return tf.concat([-sign * second, sign * first], axis=-1)


def _rotary_forward(x, cos, sin):
  xf = _cast(x, tf.float32)
  cos, sin = _cast(cos, tf.float32), _cast(sin, tf.float32)
  return _cast(xf * cos + _rotate_half(xf, 1.0) * sin, x.dtype)


def _rotary_backward(dy, cos, sin):
  dy_f = _cast(dy, tf.float32)
  cos, sin = _cast(cos, tf.float32), _cast(sin, tf.float32)
  return _cast(dy_f * cos + _rotate_half(dy_f * sin, -1.0), dy.dtype)


_ROTARY_FORWARD = _xla(_rotary_forward)
_ROTARY_BACKWARD = _xla(_rotary_backward)


def rotary(x: tf.Tensor, cos: tf.Tensor, sin: tf.Tensor) -> tf.Tensor:
  """`x * cos + rotate_half(x) * sin` (rotary position embeddings) as one fused kernel each way.

  `rotate_half([x1, x2]) = [-x2, x1]` on the halves of the last axis (Hugging Face's layout);
  computed in float32. The angles get no gradient (they come from positions).

  Args:
    x: [..., dim] queries or keys, any float dtype.
    cos, sin: broadcastable to `x` (e.g. [batch, 1, seq, dim] for x [batch, heads, seq, dim]).

  Returns:
    The rotated x, its shape and dtype.

  Example:
    >>> rotary(tf.constant([[1.0, 0.0]]), tf.constant([[0.0, 0.0]]),
    ...        tf.constant([[1.0, 1.0]])).numpy()
    array([[0., 1.]], dtype=float32)
  """
  cos, sin = tf.stop_gradient(cos), tf.stop_gradient(sin)
  return _unary(lambda x: _ROTARY_FORWARD(x, cos, sin),
                lambda x, dy: _ROTARY_BACKWARD(dy, cos, sin), x)


# ---- dropout ----------------------------------------------------------------------------------
def _dropout_forward(x, seed, rate: float):
  return _cast(_cast(x, tf.float32) * _keep_scale(tf.shape(x), seed, rate), x.dtype)


def _dropout_backward(x, seed, d_out, rate: float):
  return _cast(_cast(d_out, tf.float32) * _keep_scale(tf.shape(x), seed, rate), x.dtype)


@functools.lru_cache(maxsize=None)
def _dropout_kernels(rate: float):
  return (_xla(functools.partial(_dropout_forward, rate=rate)),
          _xla(functools.partial(_dropout_backward, rate=rate)))


def dropout(x: tf.Tensor, seed: tf.Tensor, rate: float) -> tf.Tensor:
  """Inverted dropout with the hashed mask of `seed` (see the module docstring).

  Args:
    x: any shape, any float dtype.
    seed: uint32 [2] from `dropout_seed`.
    rate: the fraction dropped; kept elements are scaled by 1 / (1 - rate).

  Returns:
    x with dropped elements zeroed, same shape and dtype.
  """
  if rate == 0.0:
    return tf.identity(x)
  forward, backward = _dropout_kernels(float(rate))

  @tf.custom_gradient
  def _fused(x):
    def grad(d_out):
      return backward(x, seed, d_out)
    return forward(x, seed), grad

  return _fused(x)


# ---- masked softmax + dropout ------------------------------------------------------------------
def masked_softmax(scores: tf.Tensor, mask_adder: Optional[tf.Tensor] = None,
                   scale: float = 1.0) -> tf.Tensor:
  """float32 softmax(scores * scale + mask_adder) over the last axis (plain TensorFlow ops).

  Args:
    scores: [..., keys], any float dtype.
    mask_adder: float32 broadcastable to `scores`, or None.
    scale: multiplies the scores first (e.g. 1 / sqrt(head size)).

  Returns:
    float32 probabilities, shape of `scores`.
  """
  # `tf.cast` first: this path is differentiated by TensorFlow (bitcasts have no gradient).
  return tf.nn.softmax(_masked_logits(tf.cast(scores, tf.float32), mask_adder, scale), axis=-1)


def _masked_logits(scores, mask_adder, scale: float):
  """float32 scores * scale + mask_adder."""
  logits = _cast(scores, tf.float32)
  if scale != 1.0:
    logits *= scale
  if mask_adder is not None:
    logits += mask_adder
  return logits


def _softmax_dropout_forward(scores, mask_adder, seed, rate: float, scale: float, dtype):
  """(dropout(softmax) in `dtype`, float32 row log-sum-exp [..., 1] for the backward pass)."""
  logits = _masked_logits(scores, mask_adder, scale)
  row_max = _row_max(logits)
  exp = tf.exp(logits - row_max)
  total = _row_sum(exp)
  keep = _keep_scale(tf.shape(scores), seed, rate)
  probs = exp / total
  return _cast(probs if keep is None else probs * keep, dtype), row_max + tf.math.log(total)


def _softmax_dropout_backward(scores, mask_adder, log_sum_exp, dropped, d_out, scale: float):
  """d scores from the forward output: with y = dropped = probs * mask (the mask scaled by
  1 / (1 - rate)) and g = d_out, d probs = g * mask, so
  d logits = probs * (g * mask - sum(g * mask * probs)) = y * g - probs * sum(y * g):
  neither the dropout mask nor the row statistics are computed again."""
  probs = tf.exp(_masked_logits(scores, mask_adder, scale) - log_sum_exp)
  y_g = _cast(dropped, tf.float32) * _cast(d_out, tf.float32)
  d_logits = y_g - probs * _row_sum(y_g)
  return _cast(d_logits * scale if scale != 1.0 else d_logits, scores.dtype)


@functools.lru_cache(maxsize=None)
def _softmax_dropout_kernels(rate: float, scale: float, dtype: tf.DType):
  forward = _xla(functools.partial(_softmax_dropout_forward, rate=rate, scale=scale, dtype=dtype))
  backward = _xla(functools.partial(_softmax_dropout_backward, scale=scale))
  return forward, backward


def masked_softmax_dropout(scores: tf.Tensor, mask_adder: Optional[tf.Tensor] = None,
                           seed: Optional[tf.Tensor] = None, rate: float = 0.0,
                           dtype: Optional[tf.DType] = None, scale: float = 1.0) -> tf.Tensor:
  """dropout(softmax(scores * scale + mask_adder)) with the softmax in float32.

  Args:
    scores: attention logits [..., keys] (e.g. [batch, heads, queries, keys]), any float dtype.
    mask_adder: float32, broadcastable to `scores` (0 for visible keys, a large negative number
      for masked ones), or None.
    seed: uint32 [2] from `dropout_seed`, or None for no dropout.
    rate: the dropout rate.
    dtype: the output dtype (default: the dtype of `scores`).
    scale: multiplies the scores first (e.g. 1 / sqrt(head size)), in float32.

  Returns:
    The dropped-out probabilities in `dtype` (gradient flows to `scores` only).

  Example:
    >>> masked_softmax_dropout(tf.zeros([1, 2]), tf.constant([[0.0, -1e9]])).numpy()
    array([[1., 0.]], dtype=float32)
  """
  dtype = tf.as_dtype(dtype or scores.dtype)
  forward, backward = _softmax_dropout_kernels(float(rate), float(scale), dtype)
  if mask_adder is not None:
    mask_adder = tf.stop_gradient(tf.cast(mask_adder, tf.float32))

  @tf.custom_gradient
  def _fused(scores):
    dropped, log_sum_exp = forward(scores, mask_adder, seed)

    def grad(d_out):
      return backward(scores, mask_adder, log_sum_exp, dropped, d_out)
    return dropped, grad

  return _fused(scores)


# ---- LayerNorm helpers ---------------------------------------------------------------------------
def _rows(*tensors):
  """Each tensor as [rows, last axis] (XLA:CPU reduces over one leading axis much faster)."""
  return [tf.reshape(t, [-1, tf.shape(t)[-1]]) for t in tensors]


def _row_mean(x):
  """Mean over the last axis (keepdims), folded first (see `_fold`)."""
  return _row_sum(x) / tf.cast(tf.shape(x)[-1], x.dtype)


def _normalize(h, gamma, beta, epsilon: float):
  """(h normalized over the last axis * gamma + beta, row means, row 1/std) of float32 rows."""
  mean = _row_mean(h)
  centered = h - mean
  inv_std = tf.math.rsqrt(_row_mean(centered * centered) + epsilon)
  out = centered * inv_std * gamma
  return (out if beta is None else out + beta), mean, inv_std


def _normalize_backward(h, gamma, mean, inv_std, d_out):
  """(float32 d h, float32 d_out * x_hat) of `_normalize`, both [rows, hidden].

  The gamma gradient is the column sums of the second, the beta gradient those of `d_out`; the
  callers take them as matmuls (XLA:CPU is slow at long column reductions). Outputs of one shape
  let XLA compute them in one loop.
  """
  x_hat = (h - mean) * inv_std
  d_out = _cast(d_out, tf.float32)
  d_x_hat = d_out * gamma
  d_h = inv_std * (d_x_hat - _row_mean(d_x_hat) - x_hat * _row_mean(d_x_hat * x_hat))
  return d_h, d_out * x_hat


def _parameter_gradients(gamma_terms, d_out, centered: bool = True):
  """(d gamma, d beta or None): float32 column sums of `gamma_terms` and of `d_out` rows."""
  d_gamma = tf_utils.column_sums(gamma_terms)
  if not centered:
    return d_gamma, None
  d_out = tf.reshape(d_out, [-1, tf.shape(d_out)[-1]])
  return d_gamma, tf_utils.column_sums(tf.cast(d_out, tf.float32))


# ---- float32 bias add ------------------------------------------------------------------------
_CAST_BIAS_ADD = _xla(lambda rows, bias: _cast(rows, tf.float32) + bias)


def cast_bias_add(rows: tf.Tensor, bias: tf.Tensor) -> tf.Tensor:
  """`float32(rows) + bias` in one pass (e.g. bfloat16 logits and a float32 output bias).

  TensorFlow casts and adds in two passes over [rows, n]. The gradient of `rows` is the upstream
  gradient cast back to the dtype of `rows`; the bias gradient is summed in float32 by a matmul
  (`tf_utils.column_sums`).

  Args:
    rows: [rows, n], any float dtype.
    bias: [n] (cast to float32).

  Returns:
    float32 [rows, n].

  Example:
    >>> cast_bias_add(tf.ones([1, 2], tf.bfloat16), tf.constant([0.001, 2.0])).numpy()
    array([[1.001, 3.   ]], dtype=float32)
  """
  width = rows.shape[-1]
  if rows.shape.rank != 2 or (width is not None and bias.shape.as_list() != [width]):
    raise ValueError(f'cast_bias_add: rows must be 2-D [rows, n] and bias [n], found rows '
                     f'{rows.shape} and bias {bias.shape}')

  @tf.custom_gradient
  def _fused(rows, bias):
    def grad(d_out):
      return tf.cast(d_out, rows.dtype), tf_utils.column_sums(d_out)
    return _CAST_BIAS_ADD(rows, bias), grad

  bias = tf.cast(bias, tf.float32)
  return _mark(_fused(rows, bias), rows, bias)


# ---- masked-LM cross-entropy on cast_bias_add's inputs ------------------------------------------
# `cast_bias_add` marks its output with its inputs, so that a loss can read the bfloat16 rows and
# the float32 bias instead of the float32 logits (`biased_rows`).
_BIASED_ROWS = '_fused_ops_biased_rows'


def _mark(logits: tf.Tensor, rows: tf.Tensor, bias: tf.Tensor) -> tf.Tensor:
  setattr(logits, _BIASED_ROWS, (rows, bias))
  return logits


def biased_rows(logits: tf.Tensor):
  """(rows, bias) when `logits` is `reshape_marked` of `cast_bias_add(rows, bias)`, else None."""
  return getattr(logits, _BIASED_ROWS, None)


def reshape_marked(logits: tf.Tensor, shape) -> tf.Tensor:
  """`tf.reshape(logits, shape)`, keeping the mark of `cast_bias_add` (see `biased_rows`)."""
  source = biased_rows(logits)
  reshaped = tf.reshape(logits, shape)
  return _mark(reshaped, *source) if source is not None else reshaped


def _biased_cross_entropy_forward(rows, bias, labels):
  """Per row of x = float32(rows) + bias: (-log softmax(x)[label], argmax(x), log-sum-exp(x)).

  Reductions over `rows` with x recomputed, never written: the maximum, its first index (the
  least index where x equals it) and sum(exp(x - max)).
  """
  x = _cast(rows, tf.float32) + bias
  width = tf.shape(x)[-1]
  row_max = tf.reduce_max(_fold(x, tf.maximum), axis=-1, keepdims=True)
  top = tf.reduce_min(_fold(tf.where(tf.equal(x, row_max), tf.range(width)[None, :], width),
                            tf.minimum), axis=-1)
  log_sum_exp = row_max + tf.math.log(_row_sum(tf.exp(x - row_max)))
  picked = (_cast(tf.gather(rows, labels[:, None], batch_dims=1), tf.float32)
            + tf.gather(bias, labels)[:, None])
  return (log_sum_exp - picked)[:, 0], top, log_sum_exp


def _biased_cross_entropy_backward(rows, bias, labels, log_sum_exp, d_loss):
  """(softmax(x) - one_hot(label)) * d_loss per row, in the dtype of `rows` (x recomputed)."""
  probs = tf.exp(_cast(rows, tf.float32) + bias - log_sum_exp)
  return tf_utils.softmax_cross_entropy_gradient(probs, labels, d_loss, rows.dtype)


_BIASED_CROSS_ENTROPY_FORWARD = _xla(_biased_cross_entropy_forward)
_BIASED_CROSS_ENTROPY_BACKWARD = _xla(_biased_cross_entropy_backward)


def biased_cross_entropy_with_argmax(labels: tf.Tensor, rows: tf.Tensor,
                                     bias: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """Cross-entropy and argmax per row of the logits `float32(rows) + bias`, never written.

  `tf_utils.sparse_softmax_cross_entropy_with_argmax(labels, cast_bias_add(rows, bias))` without
  the float32 logits: the forward pass reads the bfloat16 rows twice, the backward pass once and
  writes the rows' gradient in their dtype (no float32 [rows, vocabulary] tensor either way). The
  bias gradient is the column sums of the rows' gradient (`tf_utils.column_sums`, rounded to the
  rows' dtype once).

  Args:
    labels: int [rows] class ids in [0, n).
    rows: [rows, n], any float dtype (e.g. bfloat16 logits without their bias).
    bias: float32 [n].

  Returns:
    (float32 [rows] losses, int32 [rows] first indices of the row maxima).

  Example:
    >>> loss, top = biased_cross_entropy_with_argmax(
    ...     tf.constant([1]), tf.constant([[2.0, 0.0]], tf.bfloat16), tf.constant([0.0, 1.0]))
    >>> loss.numpy().round(4), top.numpy()
    (array([1.3133], dtype=float32), array([0], dtype=int32))
  """
  labels = tf.cast(labels, tf.int32)

  @tf.custom_gradient
  def _fused(rows, bias):
    loss, top, log_sum_exp = _BIASED_CROSS_ENTROPY_FORWARD(rows, bias, labels)

    def grad(d_loss, unused_d_top):
      d_rows = _BIASED_CROSS_ENTROPY_BACKWARD(rows, bias, labels, log_sum_exp, d_loss)
      return d_rows, tf.cast(tf_utils.column_sums(d_rows), bias.dtype)
    return (loss, top), grad

  return _fused(rows, tf.cast(bias, tf.float32))


# ---- LayerNorm ----------------------------------------------------------------------------------
def _norm_forward(x, gamma, beta, epsilon: float, dtype):
  """(LayerNorm(x) in `dtype`, float32 row means and 1/std [rows, 1])."""
  (rows,) = _rows(x)
  out, mean, inv_std = _normalize(_cast(rows, tf.float32), gamma, beta, epsilon)
  return tf.reshape(_cast(out, dtype), tf.shape(x)), mean, inv_std


def _norm_backward(x, gamma, mean, inv_std, d_out):
  """(d x in the dtype of x, float32 [rows, hidden] d_out * x_hat for the gamma gradient)."""
  rows, d_out = _rows(x, d_out)
  d_h, gamma_terms = _normalize_backward(_cast(rows, tf.float32), gamma, mean, inv_std, d_out)
  return tf.reshape(_cast(d_h, x.dtype), tf.shape(x)), gamma_terms


@functools.lru_cache(maxsize=None)
def _norm_kernels(epsilon: float, dtype: tf.DType):
  return (_xla(functools.partial(_norm_forward, epsilon=epsilon, dtype=dtype)),
          _xla(_norm_backward))


def layer_norm(x: tf.Tensor, gamma: tf.Tensor, beta: Optional[tf.Tensor] = None,
               epsilon: float = 1e-12, dtype: Optional[tf.DType] = None) -> tf.Tensor:
  """LayerNorm over the last axis as one fused kernel each way (pre-LN sub-layer inputs).

  The same values as `tf_keras.layers.LayerNormalization` (float32 statistics) up to float
  rounding; the backward pass recomputes the normalized rows from `x` and the float32 row
  statistics.

  Args:
    x: [..., hidden], any float dtype.
    gamma: [hidden], the scale (cast to float32).
    beta: [hidden], the offset, or None for a LayerNorm without one (`center=False`).
    epsilon: added to the variance.
    dtype: the output dtype (default: the dtype of `x`).

  Returns:
    [..., hidden] in `dtype`.

  Example:
    >>> layer_norm(tf.constant([[1.0, 3.0]]), tf.ones([2])).numpy().round(3)
    array([[-1.,  1.]], dtype=float32)
  """
  width = x.shape[-1]
  for name, param in (('gamma', gamma), ('beta', beta)):
    if param is not None and width is not None and param.shape.as_list() != [width]:
      raise ValueError(f'layer_norm: {name} must be [{width}] (the last axis of x, shape '
                       f'{x.shape}), found shape {param.shape}')
  dtype = tf.as_dtype(dtype or x.dtype)
  forward, backward = _norm_kernels(float(epsilon), dtype)
  gamma = tf.cast(gamma, tf.float32)
  centered = beta is not None
  beta = tf.cast(beta, tf.float32) if centered else tf.zeros_like(gamma)

  @tf.custom_gradient
  def _fused(x, gamma, beta):
    out, mean, inv_std = forward(x, gamma, beta if centered else None)

    def grad(d_out):
      d_x, gamma_terms = backward(x, gamma, mean, inv_std, d_out)
      return (d_x,) + _parameter_gradients(gamma_terms, d_out, centered)
    return out, grad

  return _fused(x, gamma, beta)
