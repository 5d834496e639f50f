"""Model Garden's reusable absl flags for training scripts (`core`)."""
