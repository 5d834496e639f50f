"""Model Garden's public entry point, `import tensorflow_models as tfm`, over mlm-garden's packages.

The same namespace layout as `tf-models-official`'s `tensorflow_models`: `tfm.nlp` (layers,
networks, models, losses, ops, tasks, encoders, serving_modules), `tfm.core`, `tfm.hyperparams`,
`tfm.optimization` and `tfm.utils` (Model Garden's `official.modeling.tf_utils`). Model Garden's
`tfm.vision` and `tfm.uplift` are out of mlm-garden's scope (BERT-family NLP): reading them
raises an AttributeError that says so.

Example:
  >>> import tensorflow_models as tfm
  >>> encoder = tfm.nlp.networks.BertEncoder(vocab_size=100, num_layers=1, hidden_size=16,
  ...                                        num_attention_heads=2, inner_dim=32)
  >>> config = tfm.nlp.encoders.EncoderConfig({'type': 'bert', 'bert': {'num_layers': 2}})
  >>> optimizer_config = tfm.optimization.OptimizationConfig()
"""

from official import core
from official.modeling import hyperparams
from official.modeling import optimization
from official.modeling import tf_utils as utils
from tensorflow_models import nlp

_OUT_OF_SCOPE = ('vision', 'uplift')


def __getattr__(name: str):
  if name in _OUT_OF_SCOPE:
    raise AttributeError(
        f'tensorflow_models.{name} is not part of mlm-garden (it covers the BERT-family NLP '
        f"part of Model Garden: {', '.join(__all__)}); install tf-models-official in its own "
        f'environment for {name}')
  raise AttributeError(f'module tensorflow_models has no attribute {name!r}')


__all__ = ['core', 'hyperparams', 'nlp', 'optimization', 'utils']
