"""`FunctionalModel`: the base of the models Model Garden builds as functional Keras models.

`BertClassifier`, `BertTokenClassifier`, `BertSpanLabeler`, `BertPretrainer` and `DualEncoder` are
functional models in Model Garden: `inputs` (the encoder's), `outputs`, a graph of layers whose
order gives `get_weights()` and the `layer_with_weights-<i>` checkpoint keys, and every variable
created by the constructor (inside the caller's distribution-strategy scope). Ours are built the
same way; this base adds what our tasks and data need on top of Keras' functional model.
"""

from typing import Any, Dict, List, Mapping, Optional

import tf_keras

from official.core import task_model
from official.modeling import checkpoint_compat


class FunctionalModel(task_model.TaskStepsMixin, tf_keras.Model):
  """A functional Keras model: subclasses build their layer graph and call
  `super().__init__(inputs=..., outputs=..., **kwargs)`, as Model Garden's models do.

  On top of Keras' functional model:
  - A dict of inputs is mapped to the graph's inputs by name; other keys are ignored (a batch may
    hold the labels too). An input the dict lacks is filled by the encoder's `complete_inputs`
    when it has one (`ModernBertEncoder`: position ids 0..seq-1), else a ValueError names it.
    A list is taken as the graph's inputs in order (a ValueError names them when it has another
    length).
  - The graph's input shapes do not restrict calls (Keras' input check is off): a model whose
    inputs Model Garden fixes to `max_seq_length` takes other lengths too.
  - Object checkpoints carry Model Garden's keys: `layer_with_weights-<i>` and the attribute names,
    without Keras' `layer-<i>` names (`checkpoint_compat.functional_checkpoint_children`).
  - `task_model.TaskStepsMixin`: `compile()` + `fit()` run a task's steps once given one.

  Subclasses keep their encoder in `_network` (Model Garden's attribute) or override
  `_completing_network`.
  """

  def __call__(self, inputs, *args, **kwargs):
    if isinstance(inputs, Mapping):
      inputs = self._graph_inputs(inputs)
    elif isinstance(inputs, (list, tuple)) and len(inputs) != len(self.inputs):
      raise ValueError(f'{self.name} takes a list of {len(self.inputs)} inputs '
                       f'{self._input_names()}, found {len(inputs)}')
    return super().__call__(inputs, *args, **kwargs)

  @property
  def input_spec(self):
    """None: Keras' input check is off (`__call__` maps and checks dict inputs)."""
    return None

  @input_spec.setter
  def input_spec(self, value):
    del value  # The functional constructor sets it; the check stays off.

  def _completing_network(self) -> Any:
    """The network whose `complete_inputs` fills the inputs a call's dict lacks (None: none)."""
    return self.__dict__.get('_network')

  def _graph_inputs(self, inputs: Mapping[str, Any]) -> List[Any]:
    """The graph's inputs, in order, from a dict keyed by their names."""
    names = self._input_names()
    if any(name not in inputs for name in names):
      complete = getattr(self._completing_network(), 'complete_inputs', None)
      if complete is not None:
        inputs = complete(inputs)
    missing = [name for name in names if name not in inputs]
    if missing:
      raise ValueError(f'{self.name} inputs lack {missing}; expected {names}, found '
                       f'{sorted(inputs)}')
    return [inputs[name] for name in names]

  def _input_names(self) -> List[str]:
    return list(self.input_names)

  def _trackable_children(self, save_type='checkpoint', **kwargs):
    children = super()._trackable_children(save_type, **kwargs)
    if save_type != 'checkpoint':
      return children
    return checkpoint_compat.functional_checkpoint_children(children)

  def get_build_config(self) -> Optional[Dict[str, Any]]:
    # Built by the constructor; Keras' generic rebuild from shapes would feed floats.
    return None
