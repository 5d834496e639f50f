"""Small helpers for model scripts: stop thresholds, synthetic data (`model_helpers`)."""
