"""Shared checks for Keras layers: shapes, dtypes and a `get_config`/`from_config` round trip."""

from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np
import tensorflow as tf
import tf_keras


def run_layer_test(layer_cls: type, init_kwargs: Dict[str, Any], input_data: Sequence[Any],
                   expected_output_shape: Any, call_kwargs: Optional[Dict[str, Any]] = None,
                   from_config: Optional[Callable[[Dict[str, Any]], Any]] = None,
                   atol: float = 1e-6) -> Any:
  """Builds `layer_cls(**init_kwargs)`, calls it on `input_data` and checks the output shape(s).

  Then serializes the layer with `get_config`, rebuilds it (`layer_cls.from_config` or `from_config`),
  copies the weights and checks the rebuilt layer gives the same outputs.

  Args:
    layer_cls: the layer class.
    init_kwargs: constructor arguments.
    input_data: positional call arguments.
    expected_output_shape: a shape tuple, or a dict/list of them matching the outputs.
    call_kwargs: keyword call arguments.
    from_config: a custom rebuild function of the config.
    atol: tolerance of the round-trip comparison.

  Returns:
    The layer's outputs.
  """
  call_kwargs = call_kwargs or {}
  layer = layer_cls(**init_kwargs)
  outputs = layer(*input_data, **call_kwargs)
  _assert_shapes(outputs, expected_output_shape)
  config = layer.get_config()
  rebuilt = (from_config or layer_cls.from_config)(config)
  rebuilt(*input_data, **call_kwargs)
  assert rebuilt.get_config() == config
  rebuilt.set_weights(layer.get_weights())
  again = rebuilt(*input_data, **call_kwargs)
  tf.nest.map_structure(lambda a, b: np.testing.assert_allclose(a, b, atol=atol), outputs, again)
  return outputs


def _assert_shapes(outputs, expected):
  if isinstance(expected, dict):
    for key, shape in expected.items():
      assert tuple(outputs[key].shape) == tuple(shape), (key, outputs[key].shape, shape)
  elif isinstance(expected, list):
    for out, shape in zip(outputs, expected):
      assert tuple(out.shape) == tuple(shape), (out.shape, shape)
  else:
    assert tuple(outputs.shape) == tuple(expected), (outputs.shape, expected)
