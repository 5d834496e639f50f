"""Activation and initializer helpers shared by the layers.

Example:
  >>> gelu = get_activation('gelu')          # the tanh approximation, as in BERT
  >>> serialize_activation(gelu)
  'gelu'
"""

from typing import Callable, Optional, Union

import tensorflow as tf
import tf_keras


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
                'identity': _identity, 'softmax': tf.nn.softmax}
_NAMES = {fn: name for name, fn in _ACTIVATIONS.items()}


def get_activation(identifier: Union[None, str, Callable]) -> Callable:
  """Returns the activation function named `identifier` (callables pass through; None = identity).

  Raises:
    ValueError: an unknown name, listing the known ones.
  """
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
