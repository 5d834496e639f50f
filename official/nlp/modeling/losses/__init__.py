"""Losses of the NLP models (Model Garden's `official.nlp.modeling.losses`)."""

from official.nlp.modeling.losses.weighted_sparse_categorical_crossentropy import (
    loss as weighted_sparse_categorical_crossentropy_loss)
