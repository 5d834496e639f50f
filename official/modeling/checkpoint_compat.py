"""Object-checkpoint compatibility with Model Garden (tf-models-official): same keys both ways.

Model Garden's `BertEncoder` is a Keras functional model: its checkpoint names each sub-layer that
has weights `layer_with_weights-<i>` (in graph order), and its `AdamWeightDecay` is a legacy Keras
optimizer: the iteration count is `optimizer/iter` and each moment is a slot saved next to its
variable (`<variable path>/.OPTIMIZER_SLOT/optimizer/m`). Our encoder is a subclassed model and our
optimizers are v2 Keras optimizers, whose own keys are attribute names (`_transformer_layers/0`,
`optimizer/_variables/7`). The two pieces here give them Model Garden's keys, so that a checkpoint
written by either framework restores into the other with no conversion step:

- `functional_checkpoint_children` (with `functional_layer_aliases`): a functional model's
  `layer_with_weights-<i>` names, listed before its attribute names (the first name of an object
  in the object graph becomes its key), without Keras' `layer-<i>` names.
- `LegacySlotsMixin`: an optimizer saves its moments as legacy slot variables and `iter`, and
  restores them from a checkpoint written either way (Model Garden's, ours, or ours before this
  change, whose slots are the `_variables` list).
- `pretrainer_items`, `restore_head_weights`, `root_names`: read pretrainer checkpoints of both
  layouts of the heads (Model Garden's `next_sentence.pooler_dense` +
  `model/classification_heads/0`, or ours before these keys, `next_sentence/{dense,out_proj}`).

Example:
  >>> ckpt = tf.train.Checkpoint(model=model, optimizer=optimizer, **model.checkpoint_items)
  >>> [name for name, _ in tf.train.list_variables(ckpt.save('/tmp/x/ckpt'))][:2]
  ['_CHECKPOINTABLE_OBJECT_GRAPH', 'encoder/layer_with_weights-0/embeddings/.ATTRIBUTES/...']
"""

import collections
from typing import Any, Dict, List, Optional, Sequence, Tuple

import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

# Attributes of our optimizers holding one slot variable per model variable, by legacy slot name
# (tf_keras' legacy Adam names: m, v, vhat).
_SLOT_LISTS = (('m', '_momentums'), ('v', '_velocities'), ('vhat', '_velocity_hats'))
# Children that hold slot variables: kept out of the saved object graph (a slot variable may not be
# both a slot and an ordinary dependency), still found by name when an older checkpoint has them.
_SLOT_CONTAINERS = ('_variables',) + tuple(attr for _, attr in _SLOT_LISTS)


def root_names(ckpt_path: str) -> List[str]:
  """The names of the objects at the top of an object checkpoint (`encoder`, `model`, ...).

  Args:
    ckpt_path: a checkpoint prefix (e.g. `runs/x/ckpt-100`).

  Example:
    >>> root_names('runs/bert_mini/ckpt-1000')
    ['global_step', 'model', 'optimizer', 'encoder', 'masked_lm', 'next_sentence.pooler_dense', ...]
  """
  reader = tf.train.load_checkpoint(ckpt_path)
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor('_CHECKPOINTABLE_OBJECT_GRAPH'))
  return [child.local_name for child in graph.nodes[0].children]


def pretrainer_items(model: Any, roots: Sequence[str]) -> Dict[str, Any]:
  """The objects to read a pretrainer (`BertPretrainerV2`) from a checkpoint with top-level `roots`.

  `model.checkpoint_items` (Model Garden's: `encoder`, `masked_lm`, `<head>.pooler_dense`), plus
  `model` when the checkpoint has it (the heads' logits layers are saved there). A checkpoint of the
  former layout, with a whole head under its name (`next_sentence/dense`, `next_sentence/out_proj`),
  reads that head by its name instead.

  Args:
    model: a pretrainer with `checkpoint_items` and `classification_heads`.
    roots: `root_names(ckpt_path)`.

  Example:
    >>> tf.train.Checkpoint(**pretrainer_items(model, root_names(prefix))).read(prefix)
  """
  items = dict(model.checkpoint_items)
  for head in getattr(model, 'classification_heads', []):
    if head.name in roots:
      for key in [key for key in items if key.startswith(f'{head.name}.')]:
        del items[key]
      items[head.name] = head
  if 'model' in roots:
    items['model'] = model
  return items


def restore_head_weights(ckpt_path: str, model: Any) -> List[str]:
  """Restores each classification head of `model` whose variables a checkpoint holds by key.

  A head's pooler and logits layers are looked up under Model Garden's keys
  (`<head>..pooler_dense/kernel`, `model/classification_heads/<i>/out_proj/kernel`) and the former
  ones (`<head>/dense/kernel`, `<head>/out_proj/kernel`); a head with a variable that is missing or
  has another shape (e.g. another number of classes) is left unchanged.

  Args:
    ckpt_path: a checkpoint prefix.
    model: a pretrainer with `classification_heads` (`ClassificationHead`s: `dense`, `out_proj`).

  Returns:
    The names of the heads restored.

  Example:
    >>> restore_head_weights('runs/bert_mini/ckpt-1000', pretrainer)
    ['next_sentence']
  """
  reader = tf.train.load_checkpoint(ckpt_path)
  shapes = reader.get_variable_to_shape_map()
  suffix = '/.ATTRIBUTES/VARIABLE_VALUE'
  restored = []
  for index, head in enumerate(getattr(model, 'classification_heads', [])):
    name = head.name.replace('.', '..').replace('/', '.S')  # escaped as in checkpoint keys
    layers = {'out_proj': [f'model/classification_heads/{index}/out_proj', f'{name}/out_proj']}
    if getattr(head, 'dense', None) is not None:
      layers['dense'] = [f'{name}..pooler_dense', f'model/classification_heads/{index}/dense',
                         f'{name}/dense']
    values = []
    for attr, prefixes in layers.items():
      layer = getattr(head, attr, None)
      for weight in ('kernel', 'bias'):
        variable = getattr(layer, weight, None)
        key = next((f'{p}/{weight}{suffix}' for p in prefixes if f'{p}/{weight}{suffix}' in shapes),
                   None)
        if variable is None or key is None or list(shapes[key]) != variable.shape.as_list():
          values = None
          break
        values.append((variable, reader.get_tensor(key)))
      if values is None:
        break
    if values:
      for variable, value in values:
        variable.assign(value)
      restored.append(head.name)
  return restored


def functional_checkpoint_children(children: Dict[str, Any],
                                   weighted_layers: Optional[Sequence[Any]] = None
                                   ) -> 'collections.OrderedDict[str, Any]':
  """A functional Keras model's checkpoint children with Model Garden's keys.

  Keras names each layer with weights `layer_with_weights-<i>` (graph order) and every layer
  `layer-<i>`. The `layer-<i>` names are left out: they add no variable, and where our graph has
  another number of weightless layers than Model Garden's (our encoders have no
  `SelfAttentionMask`), they would pair different layers when one framework restores the
  other's checkpoint.

  Args:
    children: the model's `_trackable_children('checkpoint')`.
    weighted_layers: the layers with weights in the order to number them, when it differs from
      the graph's (None: Keras' numbering).

  Returns:
    An ordered dict: `layer_with_weights-<i>` first, then the attribute names.

  Example:
    >>> def _trackable_children(self, save_type='checkpoint', **kwargs):
    ...   children = super()._trackable_children(save_type, **kwargs)
    ...   if save_type != 'checkpoint':
    ...     return children
    ...   return checkpoint_compat.functional_checkpoint_children(children)
  """
  ordered = collections.OrderedDict()
  if weighted_layers is not None:
    ordered.update(functional_layer_aliases(weighted_layers))
  for name, child in children.items():
    index_name = name.startswith('layer-') and name[len('layer-'):].isdigit()
    renumbered = weighted_layers is not None and name.startswith('layer_with_weights-')
    if not (index_name or renumbered):
      ordered.setdefault(name, child)
  return ordered


def functional_layer_aliases(layers: Sequence[Optional[Any]]
                             ) -> 'collections.OrderedDict[str, Any]':
  """`{'layer_with_weights-<i>': layer}` for the layers with weights, in functional-model order.

  Args:
    layers: the sub-layers in the order a Keras functional model lists them (None entries, e.g.
      an absent embedding projection, are skipped and take no index).

  Returns:
    An ordered dict to put first in a model's `_trackable_children` (checkpoint saves only).

  Example:
    >>> functional_layer_aliases([word_embeddings, None, pooler])
    OrderedDict([('layer_with_weights-0', word_embeddings), ('layer_with_weights-1', pooler)])
  """
  aliases = collections.OrderedDict()
  for layer in layers:
    if layer is not None:
      aliases[f'layer_with_weights-{len(aliases)}'] = layer
  return aliases


class LegacySlotsMixin:
  """Saves and restores a v2 Keras optimizer's moments as legacy slot variables (Model Garden's
  keys).

  For a Keras `Optimizer` subclass that keeps its moments in `_momentums`, `_velocities` (and
  optionally `_velocity_hats`), one entry per variable passed to `build` (indexed by
  `_index_dict`). In checkpoints:
  - the iteration count is saved as `iter` (legacy name; `_iterations` still restores);
  - the moments are saved as slots `m`, `v`, `vhat` of their model variables
    (`<variable path>/.OPTIMIZER_SLOT/<optimizer path>/m`), which TensorFlow's checkpoint machinery
    restores through `_create_or_restore_slot_variable` (also from Model Garden's checkpoints);
  - a checkpoint that still has the `_variables` list (written before this mixin) restores as
    before.
  A slot restoration that arrives before `build` waits until `restore_deferred_slots` is called at
  the end of `build`.

  Example:
    >>> class MyAdam(LegacySlotsMixin, tf_keras.optimizers.Optimizer): ...
  """

  def get_slot_names(self) -> List[str]:
    """The legacy slot names this optimizer has built (`m`, `v`, and `vhat` with AMSGrad)."""
    return [name for name, attr in _SLOT_LISTS if getattr(self, attr, None)]

  def get_slot(self, var: Any, slot_name: str) -> tf.Variable:
    """The `slot_name` slot (`m`, `v` or `vhat`) of model variable `var`.

    Raises:
      KeyError: `var` is not a variable this optimizer updates, or the slot does not exist (the
        checkpoint writer asks every object in the graph and skips on KeyError).
    """
    attr = dict(_SLOT_LISTS).get(slot_name)
    slots = getattr(self, attr, None) if attr else None
    index_dict = getattr(self, '_index_dict', None)
    if not slots or not index_dict or not isinstance(var, tf.Variable):
      raise KeyError(slot_name)
    try:
      index = index_dict[self._var_key(var)]
    except (AttributeError, KeyError, TypeError):
      raise KeyError(slot_name) from None
    return slots[index]

  def _trackable_children(self, save_type: str = 'checkpoint', **kwargs) -> Dict[str, Any]:
    children = super()._trackable_children(save_type, **kwargs)
    if save_type != 'checkpoint':
      return children
    # `iter` first, so that the iteration count's key is Model Garden's `optimizer/iter`.
    result = {'iter': self.iterations}
    result.update((name, child) for name, child in children.items()
                  if name not in _SLOT_CONTAINERS)
    return result

  def _lookup_dependency(self, name: str, cached_dependencies: Optional[Dict[str, Any]] = None):
    if name in _SLOT_CONTAINERS:  # a checkpoint written before the slots were saved as slots
      return getattr(self, name, None)
    return super()._lookup_dependency(name, cached_dependencies)

  def _create_or_restore_slot_variable(self, slot_variable_position: Any, slot_name: str,
                                       variable: Any, **kwargs) -> Optional[tf.Variable]:
    """The slot variable the checkpoint's value goes into (None: deferred until `build`)."""
    del kwargs  # e.g. slot_variable_shape: our slots always have their variable's shape
    try:
      return self.get_slot(variable, slot_name)
    except KeyError:
      pass
    if getattr(self, '_built', False) or dict(_SLOT_LISTS).get(slot_name) is None:
      return None  # a variable this optimizer does not update, or a slot it does not have
    deferred = self.__dict__.setdefault('_deferred_legacy_slots', [])
    deferred.append((slot_name, variable, slot_variable_position))
    return None

  def restore_deferred_slots(self) -> None:
    """Restores the slot values that a checkpoint delivered before the slots existed."""
    deferred: List[Tuple[str, Any, Any]] = self.__dict__.pop('_deferred_legacy_slots', [])
    for slot_name, variable, position in deferred:
      try:
        slot = self.get_slot(variable, slot_name)
      except KeyError:
        continue
      position.restore(slot)
