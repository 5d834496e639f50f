"""Actions: callables a `Controller` applies to the outputs of train loops and evaluations.

Example (export when a new best accuracy is reached):
  >>> best = orbit.actions.NewBestMetric('accuracy')
  >>> export = orbit.actions.ConditionalAction(
  ...     condition=best,
  ...     action=orbit.actions.ExportSavedModel(
  ...         model, orbit.actions.ExportFileManager(f'{model_dir}/best_export'),
  ...         signatures=model.serve))
  >>> orbit.Controller(..., eval_actions=[export])
"""

from orbit.actions.conditional_action import ConditionalAction
from orbit.actions.export_saved_model import ExportFileManager
from orbit.actions.export_saved_model import ExportSavedModel
from orbit.actions.new_best_metric import JSONPersistedValue
from orbit.actions.new_best_metric import NewBestMetric
from orbit.actions.save_checkpoint_if_preempted import SaveCheckpointIfPreempted
