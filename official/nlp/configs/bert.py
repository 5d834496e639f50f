"""The BERT pretrainer config: encoder, classification heads and the masked-LM head.

Example YAML (Model Garden layout):
  model:
    encoder: {type: bert, bert: {num_layers: 4, hidden_size: 256, num_attention_heads: 4}}
    cls_heads: [{name: next_sentence, num_classes: 2, inner_dim: 256, dropout_rate: 0.1}]
"""

import dataclasses
from typing import List, Optional

from official.modeling import hyperparams
from official.nlp.configs import encoders
# The encoder configs, importable from here too (`bert.EncoderConfig`), as how-tos write them.
from official.nlp.configs.encoders import BertEncoderConfig  # pylint: disable=unused-import  # noqa: F401
from official.nlp.configs.encoders import EncoderConfig  # pylint: disable=unused-import  # noqa: F401


@dataclasses.dataclass
class ClsHeadConfig(hyperparams.Config):
  """A classification head over one token of the sequence output (e.g. next-sentence prediction).

  Attributes:
    inner_dim: width of the pooler dense layer (0: no pooler, logits straight from the token).
    num_classes: output classes.
    activation: activation of the pooler.
    dropout_rate: dropout before the output projection.
    cls_token_idx: which position is classified.
    name: the head's name; it becomes the model output key (e.g. `next_sentence`).
  """
  inner_dim: int = hyperparams.field(0, ge=0)
  num_classes: int = hyperparams.field(2, ge=1)
  activation: Optional[str] = 'tanh'
  dropout_rate: float = hyperparams.field(0.0, ge=0.0, lt=1.0)
  cls_token_idx: int = hyperparams.field(0, ge=0)
  name: Optional[str] = None


@dataclasses.dataclass
class PretrainerConfig(hyperparams.Config):
  """`BertPretrainerV2`: an encoder, a masked-LM head tied to its embeddings, optional heads.

  Attributes:
    encoder: the encoder one-of.
    cls_heads: classification heads; each needs a unique `name`.
    mlm_activation: activation of the masked-LM transform.
    mlm_initializer_range: stddev of the masked-LM transform initializer.
    mlm_output_weights_use_proj: not supported (must stay False).
  """
  encoder: encoders.EncoderConfig = dataclasses.field(default_factory=encoders.EncoderConfig)
  cls_heads: List[ClsHeadConfig] = dataclasses.field(default_factory=list)
  mlm_activation: str = 'gelu'
  mlm_initializer_range: float = hyperparams.field(0.02, gt=0.0)
  mlm_output_weights_use_proj: bool = hyperparams.unsupported(
      False, 'a projected MLM output table is not supported by mlm-garden')

  def validate(self) -> None:
    super().validate()
    names = [head.name for head in self.cls_heads]
    for i, name in enumerate(names):
      if not name:
        raise hyperparams.ConfigError(f'cls_heads[{i}].name', 'every classification head needs a '
                                      'name (it becomes the model output key)')
      if names.index(name) != i:
        raise hyperparams.ConfigError(f'cls_heads[{i}].name', f'duplicate head name {name!r}')
