"""`BertPretrainerV2`: an encoder, a masked-LM head tied to its embeddings, classification heads.

Also Model Garden's older `BertPretrainer` (a masked-LM head and a classifier on the pooled output).
"""

from typing import Any, Dict, List, Mapping, Optional

import tensorflow as tf
import tf_keras

from official.core import task_model
from official.modeling import tf_utils
from official.nlp.modeling import layers
from official.nlp.modeling import networks
from official.nlp.modeling.models import bert_classifier
from official.nlp.modeling.models import functional_model
from official.nlp.modeling.networks import bert_encoder
from official.nlp.modeling.networks import encoder_family

_ENCODER_INPUT_NAMES = ('input_word_ids', 'input_mask', 'input_type_ids')


def masked_lm_options(encoder_network: tf_keras.Model) -> Dict[str, Any]:
  """The `MaskedLM` options that go with an encoder: its family's `masked_lm_options`.

  The encoder's family (`encoder_family.family_of_encoder`) decides the head: a
  `ModernBertEncoder` gets Hugging Face's ModernBERT head (`ModernBertPredictionHead` + tied
  decoder): a dense layer without bias and a LayerNorm without bias at the encoder's
  `norm_epsilon`. BERT's families, and an encoder of no registered family, get `{}`: BERT's head
  (dense with bias, LayerNorm with bias, eps 1e-12), so its variable names and checkpoint keys
  stay Model Garden's.

  Args:
    encoder_network: the pretrainer's encoder.

  Returns:
    Keyword arguments for `layers.MaskedLM` (e.g. `use_bias`, `norm_use_bias`, `norm_epsilon`).

  Example:
    >>> masked_lm_options(ModernBertEncoder(vocab_size=100, num_layers=3, ...))
    {'use_bias': False, 'norm_use_bias': False, 'norm_epsilon': 1e-05}
  """
  family = encoder_family.family_of_encoder(encoder_network)
  if family is None:
    return encoder_family.bert_masked_lm_options(encoder_network)
  return dict(family.masked_lm_options(encoder_network))


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertPretrainerV2(task_model.TaskStepsMixin, tf_keras.Model):
  """BERT pretraining model (Model Garden's constructor and outputs).

  Args:
    encoder_network: a `BertEncoder` with dict outputs (or any network with `get_embedding_table`
      whose outputs hold `sequence_output`).
    mlm_activation: activation of the masked-LM transform.
    mlm_initializer: initializer of the masked-LM transform.
    classification_heads: layers on the sequence output, each with a unique `name`.
    customized_masked_lm: a masked-LM layer to use instead of `MaskedLM`.
    name: the model name.

  The default `MaskedLM` takes the options `masked_lm_options(encoder_network)` gives (the
  encoder family's head): BERT's head, or Hugging Face's bias-free head for a `ModernBertEncoder`.

  Serialization: `get_config` records the encoder, the MLM arguments and the heads; a
  `customized_masked_lm` is not recorded (it is usually tied to a table of another model), so
  `from_config` rebuilds the default `MaskedLM` tied to the rebuilt encoder.

  Call args:
    inputs: dict of `input_word_ids`, `input_mask`, `input_type_ids` [batch, seq] and
      `masked_lm_positions` [batch, num_predictions] (other keys are ignored); or a list of them
      in that order (`masked_lm_positions` optional).
    training: the dropout mode.
    masked_positions_only: compute the encoder's last layer at [CLS] and the masked positions
      only (mlm-garden addition; what `MaskedLMTask`'s steps ask for): the logits and the heads'
      outputs are those of the full run (up to float rounding; other dropout draws in training),
      the last layer's work on the other positions is saved (bert_mini, 20 of 128 positions: ~15%
      of the step's matmul FLOPs). `sequence_output` and the last `encoder_outputs` are then
      [batch, 1 + num_predictions, hidden]. Applies when the encoder takes `output_positions`
      (`BertEncoder`, `BertEncoderV2`), `masked_lm_positions` is given and every head reads token
      0 (`ClassificationHead` with `cls_token_idx=0`); otherwise the full run.

  Returns:
    dict: `mlm_logits` float32 [batch, num_predictions, vocab] (when `masked_lm_positions` is
    given), every output of the encoder (`sequence_output`, `pooled_output`, `encoder_outputs`,
    ...), and one entry per classification head by its name (e.g. `next_sentence` [batch, 2]); a
    head that returns a dict (`layers.MultiClsHeads`) adds each of its entries instead.

  Attributes:
    inputs: symbolic inputs (`tf_keras.Input`), the encoder's `inputs` plus
      `masked_lm_positions` int32 [batch, None], as Model Garden's.
    outputs: the outputs of `self(self.inputs)` (the first access builds the model if needed),
      so that `tf_keras.Model(model.inputs, model.outputs)` is a functional model sharing the
      layers and weights.

  Variable names: the encoder's under `bert/<encoder name>/...`; the masked-LM head under
  `bert/cls/predictions/` (`transform/dense`, `transform/LayerNorm`, `output_bias/bias`); heads
  under `bert/<head name>/` (e.g. `next_sentence/pooler_dense`).

  Example:
    >>> pretrainer = BertPretrainerV2(encoder, mlm_activation='gelu', classification_heads=[
    ...     layers.ClassificationHead(inner_dim=16, num_classes=2, name='next_sentence')])
    >>> outputs = pretrainer(inputs)
    >>> outputs['mlm_logits'].shape, outputs['next_sentence'].shape
  """

  def __init__(self, encoder_network: tf_keras.Model, mlm_activation: Any = None,
               mlm_initializer: Any = 'glorot_uniform',
               classification_heads: Optional[List[tf_keras.layers.Layer]] = None,
               customized_masked_lm: Optional[tf_keras.layers.Layer] = None,
               name: str = 'bert', **kwargs):
    super().__init__(name=name, **kwargs)
    self.encoder_network = encoder_network
    self.classification_heads = list(classification_heads or [])
    names = [head.name for head in self.classification_heads]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
      raise ValueError(f'classification head names must be unique; duplicated: {duplicates}')
    self._mlm_activation = tf_utils.serialize_activation(mlm_activation)
    self._mlm_initializer = tf_keras.initializers.get(mlm_initializer)
    if customized_masked_lm is None:
      # Under this model's name scope, so that a table created by this call is named like the
      # encoder's other variables: `bert/<encoder name>/word_embeddings/embeddings`.
      with tf.name_scope(self.name):
        table = encoder_network.get_embedding_table()
      customized_masked_lm = layers.MaskedLM(
          embedding_table=table, activation=mlm_activation,
          initializer=tf_utils.clone_initializer(self._mlm_initializer), name='cls/predictions',
          **masked_lm_options(encoder_network))
    self.masked_lm = customized_masked_lm
    encoder_inputs = getattr(encoder_network, 'inputs', None)
    if isinstance(encoder_inputs, Mapping):
      symbolic = dict(encoder_inputs)
    else:
      symbolic = bert_encoder.symbolic_inputs()
    symbolic['masked_lm_positions'] = tf_keras.Input(shape=(None,), dtype=tf.int32,
                                                     name='masked_lm_positions')
    # Not tracked by Keras (no checkpoint entries); `outputs` is filled on first access.
    object.__setattr__(self, 'inputs', symbolic)
    object.__setattr__(self, '_symbolic_outputs', None)

  @property
  def outputs(self) -> Optional[Dict[str, Any]]:
    """The symbolic outputs of `self(self.inputs)` (computed once, on first access)."""
    if self._symbolic_outputs is None and getattr(self, 'inputs', None) is not None:
      object.__setattr__(self, '_symbolic_outputs', self(self.inputs))
    return self._symbolic_outputs

  @outputs.setter
  def outputs(self, value):
    # Keras' Model constructor sets `outputs = None` for subclassed models.
    object.__setattr__(self, '_symbolic_outputs', value)

  def call(self, inputs, training=None, masked_positions_only: bool = False):
    if isinstance(inputs, (list, tuple)):
      names = _ENCODER_INPUT_NAMES + ('masked_lm_positions',)
      if not 3 <= len(inputs) <= 4:
        raise ValueError(f'BertPretrainerV2 list inputs must be {list(names)} (the last '
                         f'optional), found {len(inputs)} tensors')
      inputs = dict(zip(names, inputs))
    mlm_positions = inputs.get('masked_lm_positions')
    if masked_positions_only and self.computes_masked_positions_only(inputs):
      # The last layer at [CLS] (0) and the masked positions; the head reads them at 1..P.
      mlm_positions = tf.cast(mlm_positions, tf.int32)
      first = tf.zeros_like(mlm_positions[:, :1])
      inputs = dict(inputs, **{bert_encoder.OUTPUT_POSITIONS: tf.concat(
          [first, mlm_positions], axis=1)})
      mlm_positions = tf.broadcast_to(tf.range(1, tf.shape(mlm_positions)[1] + 1)[None, :],
                                      tf.shape(mlm_positions))
    encoder_outputs = self.encoder_network(inputs, training=training)
    if isinstance(encoder_outputs, dict):
      outputs = dict(encoder_outputs)
    else:  # Model Garden's legacy list outputs: [sequence_output or every layer's, pooled_output].
      sequence_output, pooled_output = encoder_outputs
      outputs = {'pooled_output': pooled_output}
      if isinstance(sequence_output, (list, tuple)):
        outputs['encoder_outputs'] = list(sequence_output)
        sequence_output = sequence_output[-1]
      outputs['sequence_output'] = sequence_output
    sequence_output = outputs['sequence_output']
    if 'masked_lm_positions' in inputs:
      # float32 whatever the policy (a `customized_masked_lm` may return bfloat16), so that the
      # loss is computed in float32. On MaskedLM's float32 logits the cast returns the same tensor,
      # which keeps its mark for the fused loss (`fused_ops.biased_rows`).
      outputs['mlm_logits'] = tf.cast(self.masked_lm(sequence_output, mlm_positions), tf.float32)
    for head in self.classification_heads:
      head_outputs = head(sequence_output, training=training)
      if isinstance(head_outputs, Mapping):  # several problems in one head (MultiClsHeads)
        outputs.update(head_outputs)
      else:
        outputs[head.name] = head_outputs
    return outputs

  def computes_masked_positions_only(self, inputs: Mapping[str, Any]) -> bool:
    """Whether `call(inputs, masked_positions_only=True)` computes the last layer at [CLS] and
    the masked positions only (see `call`), rather than everywhere."""
    return (inputs.get('masked_lm_positions') is not None
            and getattr(self.encoder_network, 'supports_output_positions', False)
            and all(type(head) is layers.ClassificationHead and head.cls_token_idx == 0  # pylint: disable=unidiomatic-typecheck
                    for head in self.classification_heads))

  @property
  def checkpoint_items(self) -> Dict[str, tf.Module]:
    """Sub-modules for partial restore: `encoder`, `masked_lm`, and `<head name>.<item>` per head.

    As Model Garden: a head contributes its own `checkpoint_items`, e.g.
    `next_sentence.pooler_dense` (its logits layer is saved under
    `model/classification_heads/<i>`), so checkpoints carry Model Garden's keys.
    """
    items = {'encoder': self.encoder_network, 'masked_lm': self.masked_lm}
    for head in self.classification_heads:
      for key, item in getattr(head, 'checkpoint_items', {}).items():
        items[f'{head.name}.{key}'] = item
    return items

  def get_build_config(self):
    # Built by calling on int ids; Keras' generic rebuild from shapes feeds floats.
    return None

  def get_config(self) -> Dict[str, Any]:
    return {'encoder_network': tf_keras.layers.serialize(self.encoder_network),
            'mlm_activation': self._mlm_activation,
            'mlm_initializer': tf_keras.initializers.serialize(self._mlm_initializer),
            'classification_heads': [tf_keras.layers.serialize(h)
                                     for h in self.classification_heads],
            'name': self.name}

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    config = dict(config)
    config['encoder_network'] = tf_keras.layers.deserialize(config['encoder_network'],
                                                            custom_objects=custom_objects)
    config['classification_heads'] = [tf_keras.layers.deserialize(h, custom_objects=custom_objects)
                                      for h in config.get('classification_heads') or []]
    return cls(**config)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertPretrainer(functional_model.FunctionalModel):
  """Model Garden's first BERT pretraining model (prefer `BertPretrainerV2`), a functional Keras
  model as Model Garden's.

  The graph: the network on its own `inputs`, a masked-LM head `cls/predictions` tied to its
  embedding table on the sequence output at `masked_lm_positions`, and a `Classification`
  network `classification` on the pooled output (e.g. next-sentence prediction).

  Args:
    network: an encoder returning `[sequence_output, pooled_output]` (or a dict with them),
      e.g. `BertEncoder(...)`; with every layer's outputs, the last layer's is used.
    num_classes: classes of the classifier.
    num_token_predictions: masked positions per sequence (the width of `masked_lm_positions`).
    embedding_table: the masked-LM output table (default: `network.get_embedding_table()`).
    activation: activation of the masked-LM transform.
    initializer: initializer of the masked-LM transform and the classifier.
    output: 'logits', or 'predictions' (log-probabilities) for both heads.

  Call args:
    inputs: a list `[input_word_ids, input_mask, input_type_ids, masked_lm_positions]` (the
      network's inputs, then the positions), or a dict with those keys.

  Returns:
    dict: `masked_lm` float32 [batch, num_token_predictions, vocab], `classification` float32
    [batch, num_classes].

  Example:
    >>> encoder = BertEncoder(vocab_size=100, hidden_size=16, num_layers=1, num_attention_heads=2,
    ...                       inner_dim=32)
    >>> pretrainer = BertPretrainer(encoder, num_classes=2, num_token_predictions=3)
    >>> outputs = pretrainer([ids, mask, type_ids, positions])
  """

  def __init__(self, network: tf_keras.layers.Layer, num_classes: int, num_token_predictions: int,
               embedding_table: Optional[tf.Variable] = None, activation: Any = None,
               initializer: Any = 'glorot_uniform', output: str = 'logits', **kwargs):
    if output not in ('logits', 'predictions'):
      raise ValueError(f'Unknown `output` value "{output}": BertPretrainer output must be '
                       f"'logits' or 'predictions'")
    initializer = tf_keras.initializers.get(initializer)
    sequence_output, cls_output = bert_classifier.sequence_and_pooled(network)
    length = sequence_output.shape[1]
    if length is not None and length < num_token_predictions:
      raise ValueError(f'BertPretrainer: the network output length {length} is less than '
                       f'num_token_predictions {num_token_predictions}')
    positions = tf_keras.Input(shape=(num_token_predictions,), dtype=tf.int32,
                               name='masked_lm_positions')
    if isinstance(network.inputs, Mapping):
      inputs = dict(network.inputs, masked_lm_positions=positions)
    else:
      inputs = list(network.inputs) + [positions]
    if embedding_table is None:
      embedding_table = network.get_embedding_table()
    masked_lm = layers.MaskedLM(embedding_table=embedding_table, activation=activation,
                                initializer=tf_utils.clone_initializer(initializer),
                                output=output, name='cls/predictions')
    classification = networks.Classification(
        input_width=int(cls_output.shape[-1]), num_classes=num_classes,
        initializer=tf_utils.clone_initializer(initializer), output=output,
        name='classification')
    outputs = {'masked_lm': masked_lm(sequence_output, masked_positions=positions),
               'classification': classification(cls_output)}
    super().__init__(inputs=inputs, outputs=bert_classifier.float32_outputs(outputs), **kwargs)
    # Model Garden's attributes (checkpoint keys).
    self.encoder = network
    self.classification = classification
    self.masked_lm = masked_lm
    object.__setattr__(self, '_pretrainer_config', dict(
        num_classes=num_classes, num_token_predictions=num_token_predictions,
        activation=tf_utils.serialize_activation(activation),
        initializer=tf_keras.initializers.serialize(initializer), output=output))

  def _completing_network(self) -> Any:
    return self.__dict__.get('encoder')

  def get_config(self) -> Dict[str, Any]:
    config = bert_encoder._plain(self._pretrainer_config)  # pylint: disable=protected-access
    return dict(config, name=self.name, network=tf_keras.layers.serialize(self.encoder))

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    config = dict(config)
    if isinstance(config['network'], Mapping):
      config['network'] = tf_keras.layers.deserialize(config['network'],
                                                      custom_objects=custom_objects)
    return cls(**config)
