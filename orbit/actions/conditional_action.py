"""`ConditionalAction`: run actions only when a condition on the outputs holds."""

from typing import Any, Callable, Sequence, Union

from orbit import runner

Condition = Callable[[runner.Output], bool]


class ConditionalAction:
  """Applies `action` (one callable or a sequence of them) to outputs that pass `condition`.

  Args:
    condition: `fn(output) -> bool`.
    action: an action or a sequence of actions, each `fn(output)`.

  Example:
    >>> export_if_good = ConditionalAction(lambda out: out['accuracy'] > 0.9, export_action)
    >>> controller = orbit.Controller(..., eval_actions=[export_if_good])
  """

  def __init__(self, condition: Condition,
               action: Union[Callable[[runner.Output], Any],
                             Sequence[Callable[[runner.Output], Any]]]):
    self.condition = condition
    self.actions = list(action) if isinstance(action, (list, tuple)) else [action]

  def __call__(self, output: runner.Output) -> None:
    if self.condition(output):
      for action in self.actions:
        action(output)
