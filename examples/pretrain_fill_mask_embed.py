"""The Python API end to end: corpus -> vocabulary -> records -> pretraining -> fill-mask, embed.

Pretrains a tiny BERT on docstrings of the Python standard library (no download) with
`official.nlp.api`, then asks it to fill masks and embeds three sentences. The model_dir carries
its vocabulary, so `api.fill_mask` and `api.embed` need only the model_dir.

Usage:
  python examples/pretrain_fill_mask_embed.py [--output_dir=/tmp/api_example] \
      [--train_steps=300] [--max_documents=3000]

(`make test` runs it with a few steps; `make demo` is the longer, better-trained version.)
"""

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from official.common import quiet  # pylint: disable=g-import-not-at-top,wrong-import-position
quiet.quiet_cli(__name__)  # hides TensorFlow's start-up lines (--verbose keeps them)

from data_tools import build_vocab  # pylint: disable=g-import-not-at-top,wrong-import-position
from data_tools import stdlib_corpus  # pylint: disable=g-import-not-at-top,wrong-import-position
from official.nlp import api  # pylint: disable=g-import-not-at-top,wrong-import-position
from official.nlp.data import create_pretraining_data  # pylint: disable=wrong-import-position

SENTENCES = ['Return a [MASK] of the list.', 'If the file does not exist, an [MASK] is raised.']
PAIRS = ['Return the number of items.', 'Return how many items there are.',
         'The socket is closed.']


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--output_dir', default='/tmp/api_example')
  parser.add_argument('--train_steps', type=int, default=300)
  parser.add_argument('--max_documents', type=int, default=3000)
  args = parser.parse_args(argv)
  out = args.output_dir

  # 1. Data: a corpus, a WordPiece vocabulary, masked-LM records (their metadata keeps the vocab).
  corpus = os.path.join(out, 'corpus.txt')
  stdlib_corpus.write_stdlib_corpus(corpus, max_documents=args.max_documents)
  vocab_file = build_vocab.build_vocab(corpus, os.path.join(out, 'vocab'),
                                       vocab_size=2000)['vocab_file']
  records = os.path.join(out, 'data', 'train.tfrecord')
  metadata = create_pretraining_data.create_pretraining_data(
      corpus, records, vocab_file=vocab_file, max_seq_length=64, max_predictions_per_seq=10,
      dupe_factor=2)

  # 2. Config: Model Garden YAML + overrides (dotted keys), then training.
  steps = args.train_steps
  params = api.load_config(os.path.join(ROOT, 'configs/pretraining/bert_tiny.yaml'), overrides={
      'task.model.encoder.bert.vocab_size': metadata['vocab_size'],  # a small corpus: < 2000
      'task.train_data.input_path': records, 'task.train_data.seq_length': 64,
      'task.train_data.max_predictions_per_seq': 10, 'task.train_data.global_batch_size': 32,
      'task.validation_data.input_path': records, 'task.validation_data.seq_length': 64,
      'task.validation_data.max_predictions_per_seq': 10,
      'task.validation_data.global_batch_size': 32,
      'trainer.steps_per_loop': min(100, steps), 'trainer.summary_interval': min(100, steps),
      'trainer.checkpoint_interval': steps, 'trainer.validation_steps': 5,
      'trainer.optimizer_config.learning_rate.polynomial.initial_learning_rate': 2e-3,
      'trainer.optimizer_config.learning_rate.polynomial.decay_steps': steps,
      'trainer.optimizer_config.warmup.polynomial.warmup_steps': max(1, steps // 10),
      'runtime.distribution_strategy': 'one_device',
  })
  model_dir = os.path.join(out, 'model')
  result = api.train(params, model_dir, steps=steps)
  print(f'result: step {result.step}, eval masked_lm_accuracy '
        f'{result.eval_logs["masked_lm_accuracy"]:.3f}, lm_example_loss '
        f'{result.eval_logs["lm_example_loss"]:.3f}')

  # 3. Inference from the model_dir alone (its vocab.txt came from the records' metadata).
  model = api.load_model(model_dir)  # load once, use twice
  for text, masks in zip(SENTENCES, api.fill_mask(model, SENTENCES, top_k=3)):
    print(f'{text} -> ' + ', '.join(f'{token} ({p:.2f})' for token, p in masks[0]))
  vectors = api.embed(model, PAIRS)
  unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
  print(f'embeddings {vectors.shape}; cosine(1, 2) {unit[0] @ unit[1]:.3f}, '
        f'cosine(1, 3) {unit[0] @ unit[2]:.3f}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
