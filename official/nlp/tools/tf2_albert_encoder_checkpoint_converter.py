"""Converts Google's TF1 ALBERT checkpoints to our `AlbertEncoder` object checkpoints (Model
Garden's tool and flags).

Input: `albert_config.json` and a name-based checkpoint (`bert/embeddings/word_embeddings`,
`bert/encoder/embedding_hidden_mapping_in/kernel`,
`bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel`, ...,
`bert/pooler/dense/kernel`, `cls/predictions/...`, `cls/seq_relationship/...`); Adam slots and
`global_step` are skipped. Output: `tf.train.Checkpoint(<checkpoint_model_name>=model).write(
<converted_checkpoint_path>)`, where the model is an `AlbertEncoder` (`--converted_model=encoder`)
or a `BertPretrainerV2` (`pretrainer`: the encoder, the masked-LM head, and a `next_sentence` head
holding ALBERT's sentence-order weights when the checkpoint has them; its `checkpoint_items`
`encoder`, `masked_lm` and `next_sentence.pooler_dense` are saved beside it, so the output serves as
a task's `init_checkpoint`). The variable layouts are `bert_weight_map`'s.

Usage:
  python -m official.nlp.tools.tf2_albert_encoder_checkpoint_converter \\
      --albert_config_file=albert_base/albert_config.json \\
      --checkpoint_to_convert=albert_base/model.ckpt-best \\
      --converted_checkpoint_path=/tmp/albert_base_tf2/albert

Errors (missing or corrupt files, a config or variable our encoder cannot hold) print one line and
exit 1; bad or missing flags exit 2.
"""

from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)

import logging
import os
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from absl import flags
import tensorflow as tf
import tf_keras

from official.common import cli_utils
from official.nlp.configs import bert
from official.nlp.configs import encoders
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.modeling.networks import albert_encoder_config
from official.nlp.tools import bert_weight_map
from official.nlp.tools import google_bert

CONVERTED_MODELS = ('encoder', 'pretrainer')
_BLOCK = 'bert/encoder/transformer/group_0/inner_group_0'
_HF_BLOCK = 'encoder.albert_layer_groups.0.albert_layers.0'
_SOP_MARKER = 'cls/seq_relationship/output_weights'
# The pretrainer's own checkpoint items, saved beside it.
_PRETRAINER_ITEMS = ('encoder', 'masked_lm')


# ---- the variable table -----------------------------------------------------------------------
def _dense(layer, hf: str, google: str, part: str, kernel_kind: str = 'kernel',
           bias_kind: str = 'plain') -> List[bert_weight_map.WeightEntry]:
  return [bert_weight_map.WeightEntry(layer.kernel, f'{hf}.weight', f'{google}/kernel',
                                      kernel_kind, part),
          bert_weight_map.WeightEntry(layer.bias, f'{hf}.bias', f'{google}/bias', bias_kind, part)]


def _norm(layer, hf: str, google: str, part: str) -> List[bert_weight_map.WeightEntry]:
  return [bert_weight_map.WeightEntry(layer.gamma, f'{hf}.weight', f'{google}/gamma', 'plain',
                                      part),
          bert_weight_map.WeightEntry(layer.beta, f'{hf}.bias', f'{google}/beta', 'plain', part)]


def albert_encoder_entries(encoder: networks.AlbertEncoder) -> List[bert_weight_map.WeightEntry]:
  """Our `AlbertEncoder` variables with their Google ALBERT (and Hugging Face `AlbertModel`) names.

  Example:
    >>> [e.google_name for e in albert_encoder_entries(encoder)][:2]
    ['bert/embeddings/word_embeddings', 'bert/embeddings/position_embeddings']
  """
  get = encoder.get_layer
  entries = [
      bert_weight_map.WeightEntry(get('word_embeddings').embeddings,
                                  'embeddings.word_embeddings.weight',
                                  'bert/embeddings/word_embeddings', 'plain', 'encoder'),
      bert_weight_map.WeightEntry(get('position_embedding').embeddings,
                                  'embeddings.position_embeddings.weight',
                                  'bert/embeddings/position_embeddings', 'plain', 'encoder'),
      bert_weight_map.WeightEntry(get('type_embeddings').embeddings,
                                  'embeddings.token_type_embeddings.weight',
                                  'bert/embeddings/token_type_embeddings', 'plain', 'encoder'),
  ]
  entries += _norm(get('embeddings/layer_norm'), 'embeddings.LayerNorm',
                   'bert/embeddings/LayerNorm', 'encoder')
  if any(layer.name == 'embedding_projection' for layer in encoder.layers):
    entries += _dense(get('embedding_projection'), 'encoder.embedding_hidden_mapping_in',
                      'bert/encoder/embedding_hidden_mapping_in', 'encoder')
  # pylint: disable=protected-access
  block = encoder.transformer_layer
  attention = block._attention_layer
  for name in ('query', 'key', 'value'):
    entries += _dense(getattr(attention, f'_{name}_dense'), f'{_HF_BLOCK}.attention.{name}',
                      f'{_BLOCK}/attention_1/self/{name}', 'encoder', 'qkv_kernel', 'qkv_bias')
  entries += _dense(attention._output_dense, f'{_HF_BLOCK}.attention.dense',
                    f'{_BLOCK}/attention_1/output/dense', 'encoder', 'attn_out')
  entries += _norm(block._attention_layer_norm, f'{_HF_BLOCK}.attention.LayerNorm',
                   f'{_BLOCK}/LayerNorm', 'encoder')
  entries += _dense(block._intermediate_dense, f'{_HF_BLOCK}.ffn',
                    f'{_BLOCK}/ffn_1/intermediate/dense', 'encoder')
  entries += _dense(block._output_dense, f'{_HF_BLOCK}.ffn_output',
                    f'{_BLOCK}/ffn_1/intermediate/output/dense', 'encoder')
  entries += _norm(block._output_layer_norm, f'{_HF_BLOCK}.full_layer_layer_norm',
                   f'{_BLOCK}/LayerNorm_1', 'encoder')
  # pylint: enable=protected-access
  entries += _dense(encoder.pooler_layer, 'pooler', 'bert/pooler/dense', 'pooler')
  return entries


# ---- building the models ------------------------------------------------------------------------
def read_albert_config(
    albert_config: Union[str, Mapping[str, Any], encoders.AlbertEncoderConfig]
) -> encoders.AlbertEncoderConfig:
  """An `AlbertEncoderConfig` from an `albert_config.json` path, its dict, or the config itself.

  Raises:
    FileNotFoundError: no such file.
    ValueError: a corrupt file, a missing field or a setting `AlbertEncoder` cannot hold.
  """
  if isinstance(albert_config, encoders.AlbertEncoderConfig):
    return albert_config
  source = 'albert config'
  if isinstance(albert_config, str):
    if not os.path.isfile(albert_config):
      raise FileNotFoundError(f'--albert_config_file={albert_config}: no such file; expected '
                              'the albert_config.json of the checkpoint')
    source, albert_config = albert_config, bert_weight_map.read_json_config(albert_config)
  return albert_encoder_config.albert_config_from_external(albert_config, source)


def build_model(config: encoders.AlbertEncoderConfig, converted_model: str = 'encoder',
                sentence_order: bool = False) -> tf_keras.Model:
  """The `AlbertEncoder` of `config`, or (`pretrainer`) a `BertPretrainerV2` around it.

  Args:
    config: the encoder config.
    converted_model: 'encoder' or 'pretrainer'.
    sentence_order: give the pretrainer a `next_sentence` head (pooler + 2 logits) for ALBERT's
      sentence-order weights.
  """
  if converted_model == 'encoder':
    return encoders.build_encoder(config)
  if converted_model != 'pretrainer':
    raise ValueError(f'--converted_model must be one of {list(CONVERTED_MODELS)}, found '
                     f'{converted_model!r}')
  heads = []
  if sentence_order:
    heads.append(bert.ClsHeadConfig(inner_dim=config.hidden_size, num_classes=2,
                                    activation='tanh', dropout_rate=config.dropout_rate,
                                    name=bert_weight_map.NEXT_SENTENCE))
  return bert_weight_map.build_pretrainer(bert.PretrainerConfig(
      encoder=encoders.EncoderConfig(type='albert', albert=config), cls_heads=heads,
      mlm_activation=config.hidden_activation, mlm_initializer_range=config.initializer_range))


def model_entries(model: tf_keras.Model) -> List[bert_weight_map.WeightEntry]:
  """The table of an `AlbertEncoder` or of a `BertPretrainerV2` around one."""
  if isinstance(model, networks.AlbertEncoder):
    return albert_encoder_entries(model)
  encoder = model.encoder_network
  entries = albert_encoder_entries(encoder) + bert_weight_map.masked_lm_entries(model.masked_lm)
  for head in model.classification_heads:
    entries += bert_weight_map.next_sentence_entries(head, encoder.get_config()['hidden_size'])
  return entries


def _checkpoint_prefix(path: str) -> str:
  """The checkpoint prefix of `path` (a prefix, or a directory with a `checkpoint` state file)."""
  prefix = tf.train.latest_checkpoint(path) if os.path.isdir(path) else path
  if not prefix or not tf.io.gfile.exists(prefix + '.index'):
    raise FileNotFoundError(f'--checkpoint_to_convert={path}: no checkpoint (expected a prefix '
                            'with a .index file, or a directory with a `checkpoint` file)')
  return prefix


def load_model(albert_config: Union[str, Mapping[str, Any], encoders.AlbertEncoderConfig],
               v1_checkpoint: str, converted_model: str = 'encoder',
               allow_unused: bool = False) -> tf_keras.Model:
  """Our model holding the weights of a Google TF1 ALBERT checkpoint.

  Args:
    albert_config: `albert_config.json` (path or dict) or an `AlbertEncoderConfig`.
    v1_checkpoint: the TF1 checkpoint prefix (or its directory).
    converted_model: 'encoder' (`AlbertEncoder`; head variables are skipped with a warning) or
      'pretrainer' (`BertPretrainerV2`, whose masked-LM head must be in the checkpoint).
    allow_unused: warn about unknown variables instead of raising.

  Raises:
    FileNotFoundError: no config or checkpoint.
    ValueError: a missing, unknown or mismatched variable (naming it and both shapes).
  """
  config = read_albert_config(albert_config)
  prefix = _checkpoint_prefix(v1_checkpoint)
  tensors = google_bert.read_tensors(prefix)
  sentence_order = _SOP_MARKER in tensors
  if converted_model == 'pretrainer' and not bert_weight_map.has_masked_lm(tensors, 'google'):
    raise ValueError(f'{prefix}: no masked-LM head (cls/predictions/output_bias is missing); '
                     'convert it with --converted_model=encoder')
  model = build_model(config, converted_model, sentence_order)
  optional = ['pooler'] if converted_model == 'encoder' or not sentence_order else []
  used = bert_weight_map.restore(model_entries(model), tensors, 'google', prefix, optional)
  if 'bert/pooler/dense/kernel' not in used:
    logging.warning('%s: no pooler weights; the pooler stays randomly initialized', prefix)
  skipped = set()
  if converted_model == 'encoder':
    skipped = {name for name in tensors if name.startswith('cls/')}
    if skipped:
      logging.warning('%s: the encoder skips the head variables %s', prefix,
                      ', '.join(sorted(skipped)))
  bert_weight_map.check_unused(tensors, used | skipped, prefix, allow_unused)
  return model


def convert_checkpoint(albert_config: Union[str, Mapping[str, Any], encoders.AlbertEncoderConfig],
                       output_path: str, v1_checkpoint: str,
                       checkpoint_model_name: str = 'encoder', converted_model: str = 'encoder',
                       allow_unused: bool = False) -> str:
  """Converts a TF1 ALBERT checkpoint into an object checkpoint written at `output_path`.

  Args:
    albert_config: `albert_config.json` (path or dict) or an `AlbertEncoderConfig`.
    output_path: the output checkpoint prefix (its directory is created).
    v1_checkpoint: the TF1 checkpoint prefix (or its directory).
    checkpoint_model_name: the key the model is saved under.
    converted_model: 'encoder' or 'pretrainer' (see `load_model`).
    allow_unused: warn about unknown variables instead of raising.

  Returns:
    `output_path`.

  Example:
    >>> convert_checkpoint('albert_base/albert_config.json', '/tmp/out/albert',
    ...                    'albert_base/model.ckpt-best')
    >>> tf.train.Checkpoint(encoder=encoder).read('/tmp/out/albert').assert_consumed()
  """
  if converted_model == 'pretrainer' and checkpoint_model_name in _PRETRAINER_ITEMS:
    raise ValueError(f'--checkpoint_model_name={checkpoint_model_name} names one of the '
                     f'pretrainer\'s checkpoint items {list(_PRETRAINER_ITEMS)}; expected another '
                     'name, e.g. model')
  model = load_model(albert_config, v1_checkpoint, converted_model, allow_unused)
  items: Dict[str, Any] = {}
  if isinstance(model, models.BertPretrainerV2):
    items = dict(model.checkpoint_items)
  items[checkpoint_model_name] = model
  tf.io.gfile.makedirs(os.path.dirname(output_path) or '.')
  tf.train.Checkpoint(**items).write(output_path)
  logging.info('wrote %s (%d variables) to %s', type(model).__name__, len(model.weights),
               output_path)
  return output_path


# ---- command line -------------------------------------------------------------------------------
PROGRAM = 'tf2_albert_encoder_checkpoint_converter'


def _define_flags() -> flags.FlagValues:
  fv = flags.FlagValues()
  flags.DEFINE_string('albert_config_file', None, 'The albert_config.json of the checkpoint.',
                      flag_values=fv)
  flags.DEFINE_string('checkpoint_to_convert', None, 'The TF1 ALBERT checkpoint prefix.',
                      flag_values=fv)
  flags.DEFINE_string('converted_checkpoint_path', None, 'The output checkpoint prefix.',
                      flag_values=fv)
  flags.DEFINE_string('checkpoint_model_name', 'encoder', 'The key the model is saved under: '
                      'tf.train.Checkpoint(<name>=model).', flag_values=fv)
  flags.DEFINE_enum('converted_model', 'encoder', CONVERTED_MODELS, 'An AlbertEncoder, or a '
                    'BertPretrainerV2 (encoder + masked-LM head + sentence-order head).',
                    flag_values=fv)
  flags.DEFINE_bool('allow_unused', False, 'Warn about unknown variables instead of failing.',
                    flag_values=fv)
  flags.DEFINE_bool('overwrite', False, 'Replace an existing output checkpoint.', flag_values=fv)
  return fv


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Console entry point; returns 0, 1 after a one-line error, or 2 for bad or missing flags."""
  fv = _define_flags()
  status = cli_utils.parse_flags(fv, argv, PROGRAM, __doc__)
  if status is not None:
    return status
  required = ('albert_config_file', 'checkpoint_to_convert', 'converted_checkpoint_path')
  missing = [name for name in required if not fv[name].value]
  if missing:
    return cli_utils.error(PROGRAM, f'missing --{", --".join(missing)}; expected all of '
                           f'--{", --".join(required)}', status=2)
  try:
    cli_utils.check_output_file(fv.converted_checkpoint_path + '.index',
                                '--converted_checkpoint_path', fv.overwrite)
    convert_checkpoint(fv.albert_config_file, fv.converted_checkpoint_path,
                       fv.checkpoint_to_convert, fv.checkpoint_model_name, fv.converted_model,
                       fv.allow_unused)
  except cli_utils.USER_ERRORS as e:
    return cli_utils.error(PROGRAM, cli_utils.message_of(e))
  print(f'{PROGRAM}: wrote the {fv.converted_model} checkpoint {fv.converted_checkpoint_path} '
        f'(key {fv.checkpoint_model_name!r})')
  return 0


if __name__ == '__main__':
  sys.exit(main())
