"""Command-line tools that prepare pretraining data (vocabulary, TFRecords, the stdlib corpus)."""
