"""Model Garden's `layers.attention`: Keras' multi-head attention and a cached variant (decoding).

`MultiHeadAttention` and `EinsumDense` are Keras' own layers (Model Garden re-exports them under
these names). `CachedAttention` adds a key/value cache for step-by-step decoding. `DenseOptions`
collects the initializer, regularizer and constraint arguments that Keras' attention and dense
layers take, for the transformer blocks built on them (`ReZeroTransformer`, `GatedFeedforward`,
`TransformerScaffold`, `TransformerDecoderBlock`).
"""

from typing import Any, Dict, Optional, Tuple

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils

MultiHeadAttention = tf_keras.layers.MultiHeadAttention
EinsumDense = tf_keras.layers.EinsumDense

_DEFAULTS = dict(kernel_initializer='glorot_uniform', bias_initializer='zeros',
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None)


def split_block_inputs(layer: tf_keras.layers.Layer, inputs: Any
                       ) -> Tuple[tf.Tensor, Optional[tf.Tensor], Optional[tf.Tensor]]:
  """`(x, key_value, attention_mask)` of a transformer block's Model Garden inputs: `x`,
  `[x, attention_mask]` or `[x, key_value, attention_mask]` (missing parts are None).

  Raises:
    ValueError: a list of another length, naming `layer`.

  Example:
    >>> split_block_inputs(block, [x, mask])
    (x, None, mask)
  """
  if not isinstance(inputs, (list, tuple)):
    return inputs, None, None
  if len(inputs) == 2:
    return inputs[0], None, inputs[1]
  if len(inputs) == 3:
    return tuple(inputs)
  raise ValueError(f'{layer.name} takes x, [x, attention_mask] or [x, key_value, attention_mask], '
                   f'found a list of {len(inputs)}')


class DenseOptions:
  """The seven initializer/regularizer/constraint arguments of Keras' dense and attention layers.

  Args:
    kernel_initializer, bias_initializer: initializers (names, configs or objects).
    kernel_regularizer, bias_regularizer, activity_regularizer: regularizers or None.
    kernel_constraint, bias_constraint: constraints or None.

  Example:
    >>> options = DenseOptions(kernel_initializer='he_normal')
    >>> tf_keras.layers.Dense(4, **options.layer_kwargs()).kernel_initializer
    <...HeNormal object ...>
    >>> options.non_default(ignore=('kernel_initializer',))
    []
  """

  NAMES: Tuple[str, ...] = tuple(_DEFAULTS)

  def __init__(self, kernel_initializer: Any = 'glorot_uniform', bias_initializer: Any = 'zeros',
               kernel_regularizer: Any = None, bias_regularizer: Any = None,
               activity_regularizer: Any = None, kernel_constraint: Any = None,
               bias_constraint: Any = None):
    self.kernel_initializer = tf_keras.initializers.get(kernel_initializer)
    self.bias_initializer = tf_keras.initializers.get(bias_initializer)
    self.kernel_regularizer = tf_keras.regularizers.get(kernel_regularizer)
    self.bias_regularizer = tf_keras.regularizers.get(bias_regularizer)
    self.activity_regularizer = tf_keras.regularizers.get(activity_regularizer)
    self.kernel_constraint = tf_keras.constraints.get(kernel_constraint)
    self.bias_constraint = tf_keras.constraints.get(bias_constraint)

  def layer_kwargs(self, initializers: bool = True) -> Dict[str, Any]:
    """Keyword arguments for a Keras layer (fresh initializer copies, so seeds are not shared)."""
    kwargs = dict(kernel_regularizer=self.kernel_regularizer,
                  bias_regularizer=self.bias_regularizer,
                  activity_regularizer=self.activity_regularizer,
                  kernel_constraint=self.kernel_constraint, bias_constraint=self.bias_constraint)
    if initializers:
      kwargs.update(kernel_initializer=tf_utils.clone_initializer(self.kernel_initializer),
                    bias_initializer=tf_utils.clone_initializer(self.bias_initializer))
    return kwargs

  def get_config(self) -> Dict[str, Any]:
    """The seven arguments, serialized (JSON-compatible)."""
    return dict(
        kernel_initializer=tf_keras.initializers.serialize(self.kernel_initializer),
        bias_initializer=tf_keras.initializers.serialize(self.bias_initializer),
        kernel_regularizer=tf_keras.regularizers.serialize(self.kernel_regularizer),
        bias_regularizer=tf_keras.regularizers.serialize(self.bias_regularizer),
        activity_regularizer=tf_keras.regularizers.serialize(self.activity_regularizer),
        kernel_constraint=tf_keras.constraints.serialize(self.kernel_constraint),
        bias_constraint=tf_keras.constraints.serialize(self.bias_constraint))

  def non_default(self, ignore: Tuple[str, ...] = ()) -> list:
    """Names of the arguments (other than `ignore`) that differ from Keras' defaults."""
    found = []
    for name in self.NAMES:
      if name in ignore:
        continue
      value = getattr(self, name)
      if name == 'bias_initializer':
        if not isinstance(value, tf_keras.initializers.Zeros):
          found.append(name)
      elif name == 'kernel_initializer':
        if not isinstance(value, tf_keras.initializers.GlorotUniform):
          found.append(name)
      elif value is not None:
        found.append(name)
    return found


def pop_dense_options(kwargs: Dict[str, Any]) -> DenseOptions:
  """Removes the seven `DenseOptions` arguments from `kwargs` and returns them as one object.

  Example:
    >>> kwargs = {'kernel_initializer': 'zeros', 'name': 'x'}
    >>> pop_dense_options(kwargs).kernel_initializer, kwargs
    (<...Zeros object ...>, {'name': 'x'})
  """
  return DenseOptions(**{name: kwargs.pop(name, default) for name, default in _DEFAULTS.items()})


def json_config(config: Dict[str, Any]) -> Dict[str, Any]:
  """Keras' `MultiHeadAttention` config with its input shapes (TensorShapes) as lists, so that
  `json.dumps` takes it (`from_config` takes either).

  Example:
    >>> json_config({'query_shape': tf.TensorShape([None, 3, 8]), 'num_heads': 2})
    {'query_shape': [None, 3, 8], 'num_heads': 2}
  """
  return {key: _shape_as_list(value) if isinstance(value, tf.TensorShape) else value
          for key, value in config.items()}


def _shape_as_list(shape: tf.TensorShape) -> Optional[list]:
  return shape.as_list() if shape.rank is not None else None


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class CachedAttention(tf_keras.layers.MultiHeadAttention):
  """Keras' `MultiHeadAttention` with a key/value cache, for autoregressive decoding.

  The projected keys and values of this call are appended to `cache['key']`/`cache['value']`
  ([batch, cached_length, heads, key_dim]) along the sequence axis, and the queries attend to all
  of them; the cache dict is updated in place and returned. With `decode_loop_step` (a
  pre-allocated cache of the full length, as on TPUs), the new keys/values are written at that
  position instead. Arguments: those of `tf_keras.layers.MultiHeadAttention`.

  Call args:
    query: [batch, T, width].
    value: [batch, S, width].
    key: optional [batch, S, width] (default `value`).
    attention_mask: [batch, T, S + cached length] (1 = attend), or broadcastable.
    cache: None (no caching), or a dict with `key` and `value`.
    decode_loop_step: the position to write at in a pre-allocated cache.
    return_attention_scores: also return the attention probabilities.

  Returns:
    `(output, cache)`, or `(output, scores, cache)` with `return_attention_scores`; output
    [batch, T, width].

  Example:
    >>> layer = CachedAttention(num_heads=2, key_dim=4)
    >>> cache = {'key': tf.zeros([1, 0, 2, 4]), 'value': tf.zeros([1, 0, 2, 4])}
    >>> out, cache = layer(tf.ones([1, 1, 8]), tf.ones([1, 1, 8]), cache=cache)
    >>> cache['key'].shape
    TensorShape([1, 1, 2, 4])
  """

  def call(self, query, value, key=None, attention_mask=None, cache: Optional[dict] = None,
           decode_loop_step=None, return_attention_scores: bool = False, training=None):
    if not self._built_from_signature:
      self._build_from_signature(query=query, value=value, key=key)
    if key is None:
      key = value
    query = self._query_dense(query)
    key = self._key_dense(key)
    value = self._value_dense(value)
    if cache:
      missing = [name for name in ('key', 'value') if name not in cache]
      if missing:
        raise ValueError(f'{self.name}: cache must hold "key" and "value", it lacks {missing}')
      key = _update_cache(cache, 'key', key, decode_loop_step)
      value = _update_cache(cache, 'value', value, decode_loop_step)
    if attention_mask is not None:
      attention_mask = tf.cast(attention_mask, tf.bool)
    output, scores = self._compute_attention(query, key, value, attention_mask, training)
    output = self._output_dense(output)
    if return_attention_scores:
      return output, scores, cache
    return output, cache

  def get_config(self) -> Dict[str, Any]:
    return json_config(super().get_config())


def _update_cache(cache: dict, name: str, new: tf.Tensor, decode_loop_step) -> tf.Tensor:
  """Adds `new` [batch, t, heads, dim] to `cache[name]`; returns (and stores) the full tensor."""
  cached = tf.cast(cache[name], new.dtype)
  if decode_loop_step is None:
    full = tf.concat([cached, new], axis=1)
  else:
    length = cached.shape[1]
    if length is None:
      raise ValueError(f'decode_loop_step needs a cache of static length; cache["{name}"] has '
                       f'shape {cached.shape}')
    at_step = tf.reshape(tf.one_hot(decode_loop_step, length, dtype=new.dtype), [1, length, 1, 1])
    full = cached * (1 - at_step) + new * at_step
  cache[name] = full
  return full
