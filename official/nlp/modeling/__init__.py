"""Model Garden's NLP modeling library: layers, networks (encoders), models (heads), ops."""

from official.nlp.modeling import layers
from official.nlp.modeling import losses
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.modeling import ops
