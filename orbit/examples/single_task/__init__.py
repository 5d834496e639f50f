"""A single-task Orbit example: `SingleTaskTrainer` and `SingleTaskEvaluator`."""
