"""Command-line tools for preparing pretraining data (vocabulary, TFRecords, the stdlib demo corpus)."""
