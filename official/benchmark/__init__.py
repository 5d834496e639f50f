"""Benchmarks and peer comparisons (Model Garden, Hugging Face) behind the scripts of scripts/."""
