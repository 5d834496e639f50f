"""How-to, example 1: assemble a BERT masked-LM pretrainer from Model Garden's building blocks.

The how-to's code as printed (only the model size is a flag): an encoder from a flat config dict
(`type` beside the fields, Hugging Face names, no `vocab_size`: 30522 as in Model Garden), the
masked-LM head, and the pretrainer; it prints the model's symbolic inputs (`input_word_ids`,
`input_mask`, `input_type_ids`, `masked_lm_positions`) and outputs (`mlm_logits`, next to the
encoder's `sequence_output` and `pooled_output`). Two lines after the how-to's code run the head
and the model on a batch of token ids.

Usage:
  python examples/howto_model_assembly.py [--hidden_size=128] [--num_layers=2] [--num_heads=2] \
      [--intermediate_size=512]      # the how-to: 768, 12, 12, 3072
"""

import argparse
import os
import sys
from typing import Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from official.common import quiet  # pylint: disable=g-import-not-at-top,wrong-import-position
quiet.quiet_cli(__name__)  # hides TensorFlow's start-up lines (--verbose keeps them)

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

from examples import howto_common  # pylint: disable=wrong-import-position
from official.nlp.modeling.layers import MaskedLM  # pylint: disable=wrong-import-position
from official.nlp.modeling.models import BertPretrainerV2  # pylint: disable=wrong-import-position
from official.nlp.modeling.networks import BertEncoder  # pylint: disable=wrong-import-position


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  howto_common.add_size_flags(parser)
  args = parser.parse_args(argv)

  # --- the how-to's code (sizes from the flags) ---
  encoder = BertEncoder.from_config({
      'type': 'bert',
      'hidden_size': args.hidden_size,
      'num_hidden_layers': args.num_layers,
      'num_attention_heads': args.num_heads,
      'intermediate_size': args.intermediate_size,
  })
  masked_lm = MaskedLM(
      embedding_table=encoder.get_embedding_table(),
      activation='gelu',
      initializer='glorot_uniform',
      output='logits',
      name='cls/predictions')
  model = BertPretrainerV2(
      encoder_network=encoder,
      mlm_activation='gelu',
      mlm_initializer='glorot_uniform',
      classification_heads=[],
      name='bert_pretrainer')
  print(model.inputs)
  print(model.outputs)
  # --- end of the how-to's code ---

  # The model and the head on two sequences of 16 token ids, 3 masked positions each.
  ids = tf.random.stateless_uniform([2, 16], [1, 2], 0, encoder.get_embedding_table().shape[0],
                                    dtype=tf.int32)
  inputs = {'input_word_ids': ids, 'input_mask': tf.ones_like(ids),
            'input_type_ids': tf.zeros_like(ids),
            'masked_lm_positions': tf.constant([[1, 5, 9], [2, 3, 4]])}
  outputs = model(inputs)
  head = masked_lm(outputs['sequence_output'], inputs['masked_lm_positions'])
  print(f"mlm_logits {outputs['mlm_logits'].shape}; MaskedLM head {head.shape}")
  return 0


if __name__ == '__main__':
  sys.exit(main())
