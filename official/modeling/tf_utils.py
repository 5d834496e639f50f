"""Activation, initializer and loss helpers shared by the layers and tasks.

Example:
  >>> gelu = get_activation('gelu')          # the tanh approximation, as in BERT
  >>> serialize_activation(gelu)
  'gelu'
  >>> sparse_softmax_cross_entropy(tf.constant([1]), tf.constant([[0.0, 0.0]])).numpy()
  array([0.6931472], dtype=float32)
"""

import functools
from typing import Any, Callable, Optional, Tuple, Union

import tensorflow as tf
import tf_keras

from official.modeling import activations
from official.modeling import bfloat16_bits
from official.modeling import bfloat16_sums


def _gelu(x):
  """GELU, tanh approximation (BERT's and Model Garden's 'gelu')."""
  return tf.nn.gelu(x, approximate=True)


def _exact_gelu(x):
  """GELU with the exact erf."""
  return tf.nn.gelu(x, approximate=False)


def _identity(x):
  return x


_ACTIVATIONS = {'gelu': _gelu, 'exact_gelu': _exact_gelu, 'relu': tf.nn.relu, 'tanh': tf.tanh,
                'sigmoid': tf.sigmoid, 'swish': tf.nn.silu, 'silu': tf.nn.silu, 'linear': _identity,
                'identity': _identity, 'softmax': tf.nn.softmax, 'relu6': tf.nn.relu6,
                'leaky_relu': tf.nn.leaky_relu, 'mish': activations.mish,
                'simple_swish': activations.simple_swish, 'hard_swish': activations.hard_swish,
                'hard_sigmoid': activations.hard_sigmoid}
_NAMES = {fn: name for name, fn in _ACTIVATIONS.items()}


def get_activation(identifier: Union[None, str, Callable], use_keras_layer: bool = False,
                   **kwargs: Any) -> Callable:
  """Returns the activation function named `identifier` (callables pass through; None = identity).

  Args:
    identifier: a name ('gelu' is the tanh approximation, 'exact_gelu' the erf form; also
      relu, relu6, leaky_relu, tanh, sigmoid, swish/silu, mish, hard_swish, hard_sigmoid,
      linear/identity, softmax, or any `tf_keras.activations` name), a callable, or None.
    use_keras_layer: return a Keras layer (`tf_keras.layers.Activation`) computing it, as Model
      Garden's `get_activation` does (for use in `tf_keras.Sequential` or with a strategy).
    **kwargs: arguments bound to the function, e.g. `alpha=0.1` for 'leaky_relu'.

  Returns:
    The function, or a layer with `use_keras_layer`.

  Raises:
    ValueError: an unknown name, listing the known ones.

  Example:
    >>> get_activation('leaky_relu', use_keras_layer=True, alpha=0.1)(tf.constant([-1.0]))
    <tf.Tensor: shape=(1,), dtype=float32, numpy=array([-0.1], dtype=float32)>
  """
  fn = _activation_fn(identifier)
  if kwargs:
    fn = functools.partial(fn, **kwargs)
  if use_keras_layer:
    return tf_keras.layers.Activation(fn)
  return fn


def _activation_fn(identifier: Union[None, str, Callable]) -> Callable:
  if identifier is None:
    return _identity
  if callable(identifier):
    return identifier
  if isinstance(identifier, str):
    name = identifier.lower()
    if name in _ACTIVATIONS:
      return _ACTIVATIONS[name]
    try:
      return tf_keras.activations.get(name)
    except ValueError:
      pass
  raise ValueError(f'unknown activation {identifier!r}; known: {", ".join(sorted(_ACTIVATIONS))}')


def get_replica_id() -> tf.Tensor:
  """The id of the current replica (int32 scalar; 0 outside `strategy.run`).

  Example:
    >>> get_replica_id().numpy()
    0
  """
  context = tf.distribute.get_replica_context()
  if context is None:  # cross-replica context
    return tf.constant(0, tf.int32)
  return tf.cast(context.replica_id_in_sync_group, tf.int32)


def cross_replica_concat(value: tf.Tensor, axis: int, name: str = 'cross_replica_concat'
                         ) -> tf.Tensor:
  """Concatenates `value` of every replica along `axis`, in replica order (call in a replica).

  The gradient flows back to each replica's own slice (summed over the replicas that use the
  concatenation). Outside a strategy (one replica) it returns `value`.

  Args:
    value: this replica's tensor, the same shape on every replica.
    axis: the concatenation axis.
    name: name scope.

  Returns:
    [..., replicas * value.shape[axis], ...].

  Example:
    >>> cross_replica_concat(tf.ones([2, 3]), axis=0).shape   # one replica
    TensorShape([2, 3])
  """
  context = tf.distribute.get_replica_context()
  if context is None or context.num_replicas_in_sync <= 1:
    return value
  with tf.name_scope(name):
    gathered = context.all_gather(value, axis=axis)
  return gathered


def serialize_activation(activation: Union[None, str, Callable]) -> Optional[str]:
  """A name `get_activation` maps back to the same function (for `get_config`)."""
  if activation is None or isinstance(activation, str):
    return activation
  if activation in _NAMES:
    return _NAMES[activation]
  return tf_keras.activations.serialize(activation)


def clone_initializer(initializer):
  """A fresh initializer with the same config (sharing one instance reuses its seed state)."""
  if isinstance(initializer, tf_keras.initializers.Initializer):
    return initializer.__class__.from_config(initializer.get_config())
  return initializer


def softmax_cross_entropy_gradient(probs: tf.Tensor, labels: tf.Tensor, upstream: tf.Tensor,
                                   dtype: tf.DType) -> tf.Tensor:
  """(probs - one_hot(labels)) * upstream[:, None] in `dtype`, without a one-hot tensor.

  The gradient of the sparse softmax cross-entropy with respect to the logits, written as one
  element-wise pass (for use inside an XLA kernel).

  Args:
    probs: float32 [rows, classes] softmax probabilities.
    labels: int [rows] class ids.
    upstream: float32 [rows] gradient of each row's loss.
    dtype: the output dtype.

  Returns:
    [rows, classes] in `dtype`.
  """
  hit = tf.equal(tf.range(tf.shape(probs)[-1], dtype=labels.dtype)[None, :], labels[:, None])
  return bfloat16_bits.cast((probs - tf.cast(hit, tf.float32)) * upstream[:, None], dtype)


@functools.lru_cache(maxsize=None)
def _softmax_gradient_kernel(dtype: tf.DType):
  return tf.function(functools.partial(softmax_cross_entropy_gradient, dtype=dtype),
                     jit_compile=True, autograph=False)


@tf.autograph.experimental.do_not_convert
@tf.custom_gradient
def _cross_entropy_from_softmax(labels, logits):
  """(cross-entropy, argmax) per row of 2-D logits from one softmax; the backward pass reuses it."""
  x = tf.cast(logits, tf.float32)
  probs = tf.nn.softmax(x, axis=-1)
  top = tf.argmax(x, axis=-1, output_type=tf.int32)
  # log-sum-exp without a second pass of exp(): the largest probability is exp(max - lse), and it is
  # at least 1/classes, so its log is exact to float rounding.
  lse = tf.gather(x, top, batch_dims=1) - tf.math.log(tf.gather(probs, top, batch_dims=1))
  loss = lse - tf.gather(x, labels, batch_dims=1)

  def grad(d_loss, unused_d_top):
    # d loss / d logits = softmax - one_hot(label), scaled by the upstream gradient and written in
    # the dtype of the logits, in one XLA loop (no one-hot tensor, no float32 copy under bfloat16).
    return None, _softmax_gradient_kernel(logits.dtype)(probs, labels, d_loss)

  return (loss, top), grad


def sparse_softmax_cross_entropy_with_argmax(labels: tf.Tensor,
                                             logits: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """Per-row cross-entropy and predicted class, from one pass of softmax and one of argmax.

  The loss is `-log softmax(logits)[label]` as `tf.nn.sparse_softmax_cross_entropy_with_logits`
  computes it (float32 softmax whatever the dtype of `logits`); the argmax is
  `tf.argmax(logits, -1)` (the first of equal maxima), which a loss needs anyway for its
  log-sum-exp, so an accuracy metric gets it for free. The gradient,
  `softmax - one_hot(label)`, is written in the dtype of `logits` by one fused loop.

  Args:
    labels: int [...] class ids in [0, num_classes).
    logits: float [..., num_classes], any float dtype.

  Returns:
    (float32 [...] losses, int32 [...] predicted classes).

  Example:
    >>> loss, top = sparse_softmax_cross_entropy_with_argmax(tf.constant([1]),
    ...                                                     tf.constant([[2.0, 0.0]]))
    >>> loss.numpy().round(4), top.numpy()
    (array([2.1269], dtype=float32), array([0], dtype=int32))
  """
  logits = tf.convert_to_tensor(logits)
  flat_labels, leading = flatten_class_labels(labels, logits, 'sparse_softmax_cross_entropy')
  rows = tf.reshape(logits, [-1, tf.shape(logits)[-1]])
  loss, top = _cross_entropy_from_softmax(flat_labels, rows)
  return tf.reshape(loss, leading), tf.reshape(top, leading)


def flatten_class_labels(labels: tf.Tensor, logits: tf.Tensor,
                         name: str) -> Tuple[tf.Tensor, tf.Tensor]:
  """int32 `labels` as one vector of rows and their shape, checked against `logits`.

  For per-row losses over [..., classes] logits: the losses come back as `tf.reshape(loss, shape)`.

  Args:
    labels: int [...] class ids.
    logits: [..., classes].
    name: the caller, named in the error.

  Returns:
    (int32 [rows] labels, int32 shape of `labels`).

  Raises:
    ValueError: the shape of `labels` is not that of `logits` without its last axis.

  Example:
    >>> flatten_class_labels(tf.constant([[1, 2]]), tf.zeros([1, 2, 5]), 'loss')[0].numpy()
    array([1, 2], dtype=int32)
  """
  labels = tf.cast(labels, tf.int32)
  if (labels.shape.rank is not None and logits.shape.rank is not None
      and not labels.shape.is_compatible_with(logits.shape[:-1])):
    raise ValueError(f'{name}: labels must have the shape of logits without its last axis; found '
                     f'labels {labels.shape} and logits {logits.shape}')
  return tf.reshape(labels, [-1]), tf.shape(labels)


def sparse_softmax_cross_entropy(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
  """`-log softmax(logits)[label]` per row, like `tf.nn.sparse_softmax_cross_entropy_with_logits`.

  Faster on CPU for wide vocabularies: one (oneDNN) softmax serves the loss and the gradient, which
  is `softmax - one_hot(label)` built in one fused loop without a dense one-hot tensor, in the
  dtype of `logits`. The softmax is float32 whatever the dtype of `logits`.

  Args:
    labels: int [...] class ids in [0, num_classes).
    logits: float [..., num_classes].

  Returns:
    float32 [...] losses.
  """
  return sparse_softmax_cross_entropy_with_argmax(labels, logits)[0]


def column_sums(rows: tf.Tensor) -> tf.Tensor:
  """[rows, n] -> [n]: the sum over rows in float32, rounded once to the dtype of `rows`
  (`bfloat16_sums.column_sums`: a matmul ones[1, rows] @ rows, on every CPU).

  Example:
    >>> column_sums(tf.constant([[1.0, 2.0], [3.0, 4.0]])).numpy()
    array([4., 6.], dtype=float32)
  """
  return bfloat16_sums.column_sums(rows)


@tf.autograph.experimental.do_not_convert
@tf.custom_gradient
def _bias_add_rows(rows, bias):
  return tf.nn.bias_add(rows, bias), lambda d_rows: (d_rows, column_sums(d_rows))


def bias_add(rows: tf.Tensor, bias: tf.Tensor) -> tf.Tensor:
  """`tf.nn.bias_add` for 2-D `rows`, whose bias gradient is summed in float32 by a matmul.

  The forward op is TensorFlow's (so a preceding matmul still fuses with it on CPU and GPU).

  Args:
    rows: [rows, n] (e.g. a matmul's output), any float dtype.
    bias: [n] tensor or variable, the dtype of `rows`.

  Returns:
    rows + bias, [rows, n].

  Example:
    >>> bias_add(tf.ones([2, 3]), tf.constant([1.0, 2.0, 3.0])).numpy()
    array([[2., 3., 4.],
           [2., 3., 4.]], dtype=float32)
  """
  # A variable is read here, outside the custom gradient: its gradient flows through the read.
  return _bias_add_rows(rows, tf.convert_to_tensor(bias))
