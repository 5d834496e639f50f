"""The ELECTRA pretrainer config: a generator and a discriminator encoder, and the loss weight.

Example YAML (Model Garden layout):
  model:
    generator_encoder: {type: bert, bert: {hidden_size: 64, num_layers: 2, embedding_size: 128}}
    discriminator_encoder: {type: bert, bert: {hidden_size: 256, num_layers: 4,
                                               embedding_size: 128}}
    num_masked_tokens: 20
    sequence_length: 128
    discriminator_loss_weight: 50.0
"""

import dataclasses
from typing import Any, List

from official.modeling import hyperparams
from official.nlp.configs import bert
from official.nlp.configs import encoders


@dataclasses.dataclass
class ElectraPretrainerConfig(hyperparams.Config):
  """`ElectraPretrainer`'s settings (Model Garden's fields and defaults).

  Attributes:
    num_masked_tokens: masked positions per sequence (the records' `max_predictions_per_seq`).
    sequence_length: tokens per sequence (the records' `seq_length`).
    num_classes: classes of the generator's sentence head (`sentence_outputs`, next-sentence).
    discriminator_loss_weight: weight of the replaced-token-detection loss in the total (ELECTRA's
      lambda, 50).
    tie_embeddings: the generator uses the discriminator's word-embedding layer (both encoders
      then need the same vocab_size and embedding width).
    disallow_correct: the generator never samples the original token at a masked position.
    generator_encoder: the generator (usually a fraction of the discriminator's size).
    discriminator_encoder: the discriminator, the encoder kept for fine-tuning.
    cls_heads: accepted as in Model Garden, whose ELECTRA model does not use them either: the
      sentence output is the generator's own head of `num_classes`.
  """
  num_masked_tokens: int = hyperparams.field(76, ge=1)
  sequence_length: int = hyperparams.field(512, ge=1)
  num_classes: int = hyperparams.field(2, ge=1)
  discriminator_loss_weight: float = hyperparams.field(50.0, ge=0.0)
  tie_embeddings: bool = True
  disallow_correct: bool = False
  generator_encoder: encoders.EncoderConfig = dataclasses.field(
      default_factory=encoders.EncoderConfig)
  discriminator_encoder: encoders.EncoderConfig = dataclasses.field(
      default_factory=encoders.EncoderConfig)
  cls_heads: List[bert.ClsHeadConfig] = dataclasses.field(default_factory=list)

  def validate(self) -> None:
    super().validate()
    if self.num_masked_tokens > self.sequence_length:
      raise hyperparams.ConfigError('num_masked_tokens', f'{self.num_masked_tokens} exceeds '
                                    f'sequence_length={self.sequence_length}')
    if not self.tie_embeddings:
      return
    generator, discriminator = self.generator_encoder.get(), self.discriminator_encoder.get()
    if generator.vocab_size != discriminator.vocab_size:
      raise hyperparams.ConfigError(
          'generator_encoder.vocab_size', f'with tie_embeddings the generator shares the '
          f'discriminator\'s vocabulary of {discriminator.vocab_size}, found '
          f'{generator.vocab_size}')
    if embedding_width(generator) != embedding_width(discriminator):
      raise hyperparams.ConfigError(
          'generator_encoder', f'with tie_embeddings the generator\'s embedding width '
          f'(embedding_size, else hidden_size) must be the discriminator\'s '
          f'{embedding_width(discriminator)}, found {embedding_width(generator)}')


def embedding_width(encoder: Any) -> int:
  """The word-embedding width of an encoder config member (`embedding_size`, else `hidden_size`).

  Example:
    >>> embedding_width(encoders.BertEncoderConfig(hidden_size=256, embedding_size=128))
    128
  """
  for name in ('embedding_size', 'embedding_width'):
    width = getattr(encoder, name, None)
    if width:
      return int(width)
  return int(encoder.hidden_size)
