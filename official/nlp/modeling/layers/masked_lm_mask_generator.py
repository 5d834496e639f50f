"""Dynamic masked-LM masking (RoBERTa style) as a Keras layer with Keras-NLP's
`MaskedLMMaskGenerator` API.

The masking itself is `ops.masked_lm_masking.mask_tokens` (its docstring gives the semantics and
the outputs); this layer holds its arguments, so it can sit in a Keras model or be used inside
`tf.data.Dataset.map`, where every epoch sees new masks of the same token ids. With
`mask_selection_length=None` the predictions are padded to the sequence length (Keras-NLP returns
ragged tensors instead).

Example:
  >>> generator = MaskedLMMaskGenerator(vocabulary_size=30522, mask_selection_rate=0.15,
  ...                                   mask_token_id=103, mask_selection_length=20,
  ...                                   unselectable_token_ids=[0, 101, 102])
  >>> outputs = generator(tf.constant([[101, 2023, 2003, 102, 0]]))
  >>> sorted(outputs)
  ['mask_ids', 'mask_positions', 'mask_weights', 'token_ids']
"""

from typing import Any, Dict, Optional, Sequence

import tf_keras

from official.nlp.modeling.ops import masked_lm_masking


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class MaskedLMMaskGenerator(tf_keras.layers.Layer):
  """Selects and replaces tokens for the masked-LM objective (see `masked_lm_masking`).

  Args:
    vocabulary_size, mask_selection_rate, mask_token_id, mask_selection_length,
      unselectable_token_ids, mask_token_rate, random_token_rate, seed: as in
      `masked_lm_masking.mask_tokens`, which documents them (Keras-NLP's names and defaults).
    **kwargs: the arguments of a Keras `Layer` (`name`, ...).

  Raises:
    ValueError: bad arguments, at construction (`masked_lm_masking.check_masking_args`).
  """

  def __init__(self, vocabulary_size: int, mask_selection_rate: float, mask_token_id: int,
               mask_selection_length: Optional[int] = None,
               unselectable_token_ids: Sequence[int] = (0,), mask_token_rate: float = 0.8,
               random_token_rate: float = 0.1, seed: Optional[int] = None, **kwargs):
    super().__init__(**kwargs)
    masked_lm_masking.check_masking_args(vocabulary_size, mask_selection_rate, mask_token_id,
                                         mask_selection_length, mask_token_rate,
                                         random_token_rate)
    self.vocabulary_size = vocabulary_size
    self.mask_selection_rate = mask_selection_rate
    self.mask_token_id = mask_token_id
    self.mask_selection_length = mask_selection_length
    self.unselectable_token_ids = [int(i) for i in (unselectable_token_ids or [])]
    self.mask_token_rate = mask_token_rate
    self.random_token_rate = random_token_rate
    self.seed = seed

  def call(self, inputs) -> Dict[str, Any]:
    """Masks `inputs` (`[batch, seq]`, `[seq]` or ragged int ids); see `mask_tokens`."""
    return masked_lm_masking.mask_tokens(inputs, **self._masking_args())

  def _masking_args(self) -> Dict[str, Any]:
    return {
        'vocabulary_size': self.vocabulary_size,
        'mask_selection_rate': self.mask_selection_rate,
        'mask_token_id': self.mask_token_id,
        'mask_selection_length': self.mask_selection_length,
        'unselectable_token_ids': self.unselectable_token_ids,
        'mask_token_rate': self.mask_token_rate,
        'random_token_rate': self.random_token_rate,
        'seed': self.seed,
    }

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(self._masking_args())
    return config
