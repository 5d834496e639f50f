"""Frees what `tf.custom_gradient` leaves behind when a process trains one model after another.

Inside a `tf.function`, every call of a `tf.custom_gradient` function registers its gradient
closure in TensorFlow's process-wide gradient registry under a fresh name (`CustomGradient-<uid>`)
and never removes it (TensorFlow issues #27492 and #97697, open in 2.21). The closure holds tensors
of the traced graph, so the graph, its function library and everything it captured stay alive for
the rest of the process. Our fused kernels (`fused_ops`, `tf_utils.sparse_softmax_cross_entropy`,
`tf_utils.bias_add`) are custom gradients, so a process that fine-tunes model after model (the
downstream evaluation's sweep and seeds, continuous fine-tuning) grew by every model it traced:
about 245 MB per bert_mini fine-tuning run, 7 GB after 28 runs.

`released_custom_gradients()` wraps the life of one model: on exit it drops the registry entries
made inside the block. Only use it where nothing traced inside the block is differentiated again
afterwards (a graph built inside it whose gradient is taken later would not find its gradient
function: `LookupError: gradient registry has no entry for: CustomGradient-...`).

Example:
  >>> with released_custom_gradients():
  ...   model = build_and_train()   # traces train steps that use custom gradients
  ...   scores = evaluate(model)
  >>> # the traced graphs can now be garbage collected with the model
"""

import contextlib
from typing import Collection, Iterator, List

from tensorflow.python.framework import ops  # pylint: disable=g-direct-tensorflow-import

_PREFIX = 'CustomGradient-'


def _entries() -> dict:
  """The registry's name -> entry dict (a private attribute of `registry.Registry`)."""
  entries = getattr(ops.gradient_registry, '_registry', None)
  if not isinstance(entries, dict):
    raise RuntimeError('TensorFlow changed the gradient registry: expected '
                       f'`ops.gradient_registry._registry` to be a dict, found {type(entries)}')
  return entries


def custom_gradient_names() -> List[str]:
  """Names of the `tf.custom_gradient` entries now in the gradient registry."""
  return [name for name in _entries() if name.startswith(_PREFIX)]


def drop_custom_gradients(keep: Collection[str] = ()) -> int:
  """Drops every `tf.custom_gradient` registry entry whose name is not in `keep`; returns how many.

  Args:
    keep: names to keep (`custom_gradient_names()` taken while the models still in use existed).
  """
  entries = _entries()
  keep = set(keep)
  dropped = [name for name in entries if name.startswith(_PREFIX) and name not in keep]
  for name in dropped:
    del entries[name]
  return len(dropped)


@contextlib.contextmanager
def released_custom_gradients() -> Iterator[None]:
  """Drops the `tf.custom_gradient` registry entries made inside the block when it exits.

  Entries made before the block (models still in use) are kept; on an exception the block's own
  entries are dropped too, since its models are gone with it.
  """
  before = custom_gradient_names()
  try:
    yield
  finally:
    drop_custom_gradients(keep=before)
