"""Dataclass configs of the optimizer, the learning-rate schedule and its warmup."""
