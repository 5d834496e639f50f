"""Shared test helpers: the tiny encoders' sizes, and checks of Keras layers (shapes, dtypes, a
`get_config`/`from_config` round trip, a walk of a functional model's layer graph)."""

import json
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf
import tf_keras

# The tests' tiny encoders, written once: tests that build the same shapes share what TensorFlow
# traced and compiled for them, and a reader finds the sizes in one place. Config field names
# (`task.model.encoder.<type>.*`), without `vocab_size` (each test's vocabulary sets it).
TINY_BERT = dict(hidden_size=16, intermediate_size=32, num_layers=2, num_attention_heads=2,
                 max_position_embeddings=32)
# Layer 0 global, layers 1-2 in an 8-token window (configs/pretraining/modernbert_*.yaml's layout).
TINY_MODERNBERT = dict(hidden_size=32, intermediate_size=48, num_layers=3, num_attention_heads=2,
                       local_attention=8, max_position_embeddings=32)
TINY_ENCODERS = {'bert': TINY_BERT, 'modernbert': TINY_MODERNBERT}


def tiny_config(encoder: str = 'bert', **fields: Any) -> Dict[str, Any]:
  """The tiny `encoder`'s config fields (`TINY_BERT` or `TINY_MODERNBERT`) updated by `fields`.

  Example:
    >>> encoders.BertEncoderConfig(**tiny_config(vocab_size=30, max_position_embeddings=16))
  """
  if encoder not in TINY_ENCODERS:
    raise ValueError(f'tiny encoder must be one of {sorted(TINY_ENCODERS)}, found {encoder!r}')
  return dict(TINY_ENCODERS[encoder], **fields)


def tiny_kwargs(encoder: str = 'bert', **kwargs: Any) -> Dict[str, Any]:
  """Constructor arguments of the tiny `networks.BertEncoder` (`encoder='bert'`) or
  `networks.ModernBertEncoder`, updated by `kwargs` (the constructor's own names).

  Example:
    >>> networks.BertEncoder(**tiny_kwargs(vocab_size=30, max_sequence_length=16))
  """
  fields = dict(TINY_ENCODERS[encoder])
  fields['max_sequence_length'] = fields.pop('max_position_embeddings')
  if encoder == 'bert':
    fields['inner_dim'] = fields.pop('intermediate_size')
  return dict(fields, **kwargs)


def tiny_overrides(encoder: str = 'bert', prefix: str = 'task.model.encoder',
                   **fields: Any) -> List[str]:
  """`--params_override` items (`<prefix>.<encoder>.<field>=<value>`) of the tiny encoder.

  Example:
    >>> ','.join(tiny_overrides(vocab_size=50, num_layers=1))
    'task.model.encoder.bert.hidden_size=16,...,task.model.encoder.bert.num_layers=1,...'
  """
  return [f'{prefix}.{encoder}.{name}={value}'
          for name, value in tiny_config(encoder, **fields).items()]


def run_layer_test(layer_cls: type, init_kwargs: Dict[str, Any], input_data: Sequence[Any],
                   expected_output_shape: Any, call_kwargs: Optional[Dict[str, Any]] = None,
                   from_config: Optional[Callable[[Dict[str, Any]], Any]] = None,
                   expected_output_dtype: Optional[Any] = None, atol: float = 1e-6) -> Any:
  """Builds `layer_cls(**init_kwargs)`, calls it on `input_data`, checks output shapes and dtypes.

  Then serializes the layer with `get_config` (which must be JSON-serializable), rebuilds it from
  the JSON round trip (`layer_cls.from_config` or `from_config`), checks the rebuilt config is
  identical, copies the weights and checks the rebuilt layer gives the same outputs. Without a
  custom `from_config`, the layer must also survive `tf_keras.layers.serialize`/`deserialize` (i.e.
  be registered as serializable).

  Args:
    layer_cls: the layer class.
    init_kwargs: constructor arguments.
    input_data: positional call arguments.
    expected_output_shape: a shape tuple, or a dict/list of them matching the outputs.
    call_kwargs: keyword call arguments.
    from_config: a custom rebuild function of the config.
    expected_output_dtype: the dtype of every output (default: the layer's compute dtype).
    atol: tolerance of the round-trip comparison.

  Returns:
    The layer's outputs.

  Example:
    >>> run_layer_test(OnDeviceEmbedding, dict(vocab_size=5, embedding_width=4),
    ...                [tf.constant([[0, 3]])], (1, 2, 4))
  """
  call_kwargs = call_kwargs or {}
  layer = layer_cls(**init_kwargs)
  outputs = layer(*input_data, **call_kwargs)
  _assert_shapes(outputs, expected_output_shape)
  dtype = tf.as_dtype(expected_output_dtype or layer.compute_dtype)
  for output in tf.nest.flatten(outputs):
    assert output.dtype == dtype, (output.dtype, dtype)

  config = layer.get_config()
  # Rebuilt from the config as it comes back from JSON (how Keras stores it in saved models).
  rebuilt = (from_config or layer_cls.from_config)(json.loads(json.dumps(config)))
  rebuilt(*input_data, **call_kwargs)
  assert _as_json(rebuilt.get_config()) == _as_json(config), (rebuilt.get_config(), config)
  assert len(rebuilt.weights) == len(layer.weights)
  rebuilt.set_weights(layer.get_weights())
  again = rebuilt(*input_data, **call_kwargs)
  tf.nest.map_structure(lambda a, b: np.testing.assert_allclose(a, b, atol=atol), outputs, again)

  if from_config is None:
    clone = tf_keras.layers.deserialize(tf_keras.layers.serialize(layer))
    assert type(clone) is layer_cls and _as_json(clone.get_config()) == _as_json(config)
  return outputs


def _as_json(config: Dict[str, Any]) -> str:
  return json.dumps(config, sort_keys=True)


def _assert_shapes(outputs, expected):
  if isinstance(expected, dict):
    assert set(outputs) >= set(expected), (sorted(outputs), sorted(expected))
    for key, shape in expected.items():
      assert tuple(outputs[key].shape) == tuple(shape), (key, outputs[key].shape, shape)
  elif isinstance(expected, list):
    assert len(outputs) == len(expected), (len(outputs), len(expected))
    for out, shape in zip(outputs, expected):
      assert tuple(out.shape) == tuple(shape), (out.shape, shape)
  else:
    assert tuple(outputs.shape) == tuple(expected), (outputs.shape, expected)


def walk_layer_graph(model: tf_keras.Model, inputs: Any,
                     call: Optional[Callable[[Any, Sequence[Any], Dict[str, Any]], Any]] = None
                     ) -> Any:
  """`model`'s outputs, computed by calling the layers of its functional graph one by one.

  Walks `_nodes_by_depth` from the inputs to the outputs, feeding each node the tensors its
  arguments refer to, the way tools that rebuild a functional model from its graph do (e.g. the
  per-example gradient clipping of differentially private training). `inputs` may be data or the
  model's own symbolic `inputs` (then the result builds a new functional model).

  Args:
    model: a functional Keras model.
    inputs: its inputs (data or symbolic).
    call: `call(layer, args, kwargs)` computes a node (default: `layer(*args, **kwargs)`); e.g.
      `layer.call(*args, **kwargs)` expands a layer into its sub-layers on symbolic inputs.
  """
  call = call or (lambda layer, args, kwargs: layer(*args, **kwargs))
  # pylint: disable=protected-access
  tensors = {}
  for reference, value in zip(model.inputs, model._flatten_to_reference_inputs(inputs)):
    key = str(id(reference))
    tensors[key] = [model._conform_to_reference_input(value, reference)] * (
        model._tensor_usage_count[key])
  for depth in sorted(model._nodes_by_depth, reverse=True):
    for node in model._nodes_by_depth[depth]:
      if node.is_input:
        continue
      args, kwargs = node.map_arguments(tensors)
      outputs = call(node.layer, args, kwargs)
      for key, value in zip(node.flat_output_ids, tf.nest.flatten(outputs)):
        tensors[key] = [value] * model._tensor_usage_count[key]
  results = [tensors[str(id(output))].pop() for output in model.outputs]
  return tf.nest.pack_sequence_as(model._nested_outputs, results)
