"""Examples of Orbit trainers and evaluators."""
