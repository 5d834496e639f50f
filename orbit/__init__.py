"""Orbit: a small library of training and evaluation loops for TensorFlow (Model Garden's API).

`Controller` runs the outer loop (steps per loop, summaries, checkpoints, evaluation);
`StandardTrainer`/`StandardEvaluator` run the inner loop around a user's `train_step` /
`eval_step`; `actions` are hooks applied to loop outputs; `utils` holds the shared helpers.

Example:
  >>> import orbit
  >>> controller = orbit.Controller(trainer=trainer, global_step=trainer.global_step,
  ...                               steps_per_loop=100, checkpoint_manager=manager)
  >>> controller.train(steps=1000)
"""

from orbit import actions
from orbit import utils
from orbit.controller import Action
from orbit.controller import Controller
from orbit.runner import AbstractEvaluator
from orbit.runner import AbstractTrainer
from orbit.standard_runner import StandardEvaluator
from orbit.standard_runner import StandardEvaluatorOptions
from orbit.standard_runner import StandardTrainer
from orbit.standard_runner import StandardTrainerOptions
