"""`tfm.nlp`: Model Garden's NLP namespace (modeling, tasks, encoder configs, serving modules).

Example:
  >>> import tensorflow_models as tfm
  >>> block = tfm.nlp.layers.TransformerEncoderBlock(num_attention_heads=2, inner_dim=10,
  ...                                                inner_activation='relu')
  >>> task = tfm.nlp.tasks.TaggingTask(params=tfm.nlp.tasks.TaggingConfig())
"""

from official.nlp import tasks
from official.nlp.configs import encoders
from official.nlp.modeling import layers
from official.nlp.modeling import losses
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.modeling import ops
from official.nlp.serving import serving_modules

__all__ = ['encoders', 'layers', 'losses', 'models', 'networks', 'ops', 'serving_modules', 'tasks']
