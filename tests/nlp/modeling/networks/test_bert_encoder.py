"""Tests for official/nlp/modeling/networks/bert_encoder.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from official.nlp.modeling import networks
from official.nlp.modeling.networks import bert_encoder
from tests import testing
from tests.nlp.modeling import numpy_bert

VOCAB, HIDDEN, SEQ = 50, testing.TINY_BERT['hidden_size'], 8


def _encoder(**kwargs):
  defaults = testing.tiny_kwargs(vocab_size=VOCAB, max_sequence_length=16, type_vocab_size=2,
                                 output_dropout=0.0, attention_dropout=0.0, dict_outputs=True,
                                 initializer=tf_keras.initializers.TruncatedNormal(stddev=0.5,
                                                                                   seed=1))
  defaults.update(kwargs)
  return networks.BertEncoder(**defaults)


def _inputs(batch=3, seed=0):
  rng = np.random.default_rng(seed)
  word_ids = rng.integers(0, VOCAB, (batch, SEQ)).astype(np.int32)
  mask = np.ones((batch, SEQ), np.int32)
  mask[1, 5:] = 0
  mask[2, 3:] = 0
  type_ids = (np.arange(SEQ) >= SEQ // 2).astype(np.int32)[None].repeat(batch, 0)
  return word_ids, mask, type_ids


@pytest.mark.slow
@pytest.mark.parametrize('norm_first', [False, True])
def test_forward_matches_numpy(norm_first):
  encoder = _encoder(norm_first=norm_first)
  word_ids, mask, type_ids = _inputs()
  outputs = encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  sequence, pooled = numpy_bert.encoder_forward(encoder, word_ids, mask, type_ids, norm_first)
  np.testing.assert_allclose(outputs['sequence_output'], sequence, atol=1e-5)
  np.testing.assert_allclose(outputs['pooled_output'], pooled, atol=1e-5)
  assert len(outputs['encoder_outputs']) == 2
  np.testing.assert_allclose(outputs['encoder_outputs'][-1], outputs['sequence_output'])


@pytest.mark.slow
def test_padding_does_not_change_real_tokens():
  encoder = _encoder()
  word_ids, mask, type_ids = _inputs()
  changed = word_ids.copy()
  changed[1, 5:] = (changed[1, 5:] + 7) % VOCAB  # only padded positions of row 1 change
  first = encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  second = encoder(dict(input_word_ids=changed, input_mask=mask, input_type_ids=type_ids))
  np.testing.assert_allclose(first['sequence_output'][1, :5], second['sequence_output'][1, :5],
                             atol=1e-6)


def test_list_inputs_list_outputs_and_all_encoder_outputs():
  word_ids, mask, type_ids = _inputs()
  sequence, pooled = _encoder(dict_outputs=False)([word_ids, mask, type_ids])
  assert sequence.shape == (3, SEQ, HIDDEN) and pooled.shape == (3, HIDDEN)
  assert sequence.dtype == tf.float32 and pooled.dtype == tf.float32
  all_outputs, _ = _encoder(dict_outputs=False, return_all_encoder_outputs=True)(
      [word_ids, mask, type_ids])
  assert len(all_outputs) == 2


def test_embedding_width_factorization_and_table():
  encoder = _encoder(embedding_width=8)
  word_ids, mask, type_ids = _inputs()
  outputs = encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  assert encoder.get_embedding_table().shape == (VOCAB, 8)
  assert outputs['sequence_output'].shape == (3, SEQ, HIDDEN)
  sequence, _ = numpy_bert.encoder_forward(encoder, word_ids, mask, type_ids)
  np.testing.assert_allclose(outputs['sequence_output'], sequence, atol=1e-5)


def test_output_range_returns_first_tokens_of_last_layer():
  full = _encoder()
  ranged = _encoder(output_range=1)
  word_ids, mask, type_ids = _inputs()
  inputs = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  full_outputs = full(inputs)
  ranged(inputs)
  ranged.set_weights(full.get_weights())
  outputs = ranged(inputs)
  assert outputs['sequence_output'].shape == (3, 1, HIDDEN)
  np.testing.assert_allclose(outputs['sequence_output'][:, 0],
                             full_outputs['sequence_output'][:, 0], atol=1e-5)
  np.testing.assert_allclose(outputs['pooled_output'], full_outputs['pooled_output'], atol=1e-5)


def test_variable_names_follow_model_garden():
  encoder = _encoder(name='bert_encoder')
  word_ids, mask, type_ids = _inputs()
  encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  shapes = {v.name: tuple(v.shape) for v in encoder.variables}
  expected = {
      'word_embeddings/embeddings:0': (VOCAB, HIDDEN),
      'position_embedding/embeddings:0': (16, HIDDEN),
      'type_embeddings/embeddings:0': (2, HIDDEN),
      'embeddings/layer_norm/gamma:0': (HIDDEN,),
      'transformer/layer_0/self_attention/query/kernel:0': (HIDDEN, 2, 8),
      'transformer/layer_0/self_attention/query/bias:0': (2, 8),
      'transformer/layer_1/self_attention/attention_output/kernel:0': (2, 8, HIDDEN),
      'transformer/layer_0/self_attention_layer_norm/gamma:0': (HIDDEN,),
      'transformer/layer_0/intermediate/kernel:0': (HIDDEN, 32),
      'transformer/layer_0/output/kernel:0': (32, HIDDEN),
      'transformer/layer_1/output_layer_norm/beta:0': (HIDDEN,),
      'pooler_transform/kernel:0': (HIDDEN, HIDDEN)}
  for name, shape in expected.items():
    assert shapes.get(name) == shape, (name, shapes.get(name))
  assert len(shapes) == 5 + 2 * 16 + 2


def test_object_checkpoint_keys_follow_model_garden_attributes(tmp_path):
  encoder = _encoder()
  word_ids, mask, type_ids = _inputs()
  encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  path = tf.train.Checkpoint(encoder=encoder).save(str(tmp_path / 'ckpt'))
  keys = {name.split('/.ATTRIBUTES')[0] for name, _ in tf.train.list_variables(path)}
  # Model Garden's functional BertEncoder: `layer_with_weights-<i>` in graph order (word, position,
  # type embeddings, LayerNorm, the blocks, the pooler), then the blocks' attribute names.
  for key in ('encoder/layer_with_weights-0/embeddings', 'encoder/layer_with_weights-1/embeddings',
              'encoder/layer_with_weights-2/embeddings', 'encoder/layer_with_weights-3/gamma',
              'encoder/layer_with_weights-4/_attention_layer/_query_dense/kernel',
              'encoder/layer_with_weights-5/_attention_layer/_output_dense/bias',
              'encoder/layer_with_weights-4/_attention_layer_norm/gamma',
              'encoder/layer_with_weights-4/_intermediate_dense/kernel',
              'encoder/layer_with_weights-4/_output_dense/kernel',
              'encoder/layer_with_weights-4/_output_layer_norm/beta',
              'encoder/layer_with_weights-6/kernel'):
    assert key in keys, (key, sorted(keys))


def test_attention_scores_and_word_embeddings_outputs():
  encoder = _encoder(return_attention_scores=True, return_word_embeddings=True)
  word_ids, mask, type_ids = _inputs()
  outputs = encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  assert len(outputs['attention_scores']) == 2
  assert outputs['attention_scores'][0].shape == (3, 2, SEQ, SEQ)
  np.testing.assert_array_equal(outputs['attention_scores'][1][2, :, :, 3:], 0.0)
  np.testing.assert_allclose(outputs['word_embeddings'],
                             encoder.get_embedding_table().numpy()[word_ids])


@pytest.mark.slow
def test_get_config_round_trip():
  word_ids, mask, type_ids = _inputs()
  inputs = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  kwargs = testing.tiny_kwargs(vocab_size=VOCAB, max_sequence_length=16, type_vocab_size=2,
                               norm_first=True, embedding_width=8, inner_activation='exact_gelu',
                               output_range=2, return_attention_scores=True, dict_outputs=True,
                               name='my_encoder')
  outputs = testing.run_layer_test(
      networks.BertEncoder, kwargs, [inputs],
      {'sequence_output': (3, 2, HIDDEN), 'pooled_output': (3, HIDDEN)})
  assert outputs['attention_scores'][-1].shape == (3, 2, 2, SEQ)
  config = networks.BertEncoder(**kwargs).get_config()
  assert config['name'] == 'my_encoder' and config['inner_activation'] == 'exact_gelu'
  assert config['initializer']['class_name'] == 'TruncatedNormal'


@pytest.mark.slow
@pytest.mark.parametrize('policy', ['mixed_bfloat16', 'mixed_float16'])
def test_mixed_precision_computes_in_the_policy_dtype(policy):
  word_ids, mask, type_ids = _inputs()
  inputs = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  reference = _encoder()
  expected = reference(inputs)
  tf_keras.mixed_precision.set_global_policy(policy)
  try:
    encoder = _encoder()
    encoder(inputs)
    encoder.set_weights(reference.get_weights())
    outputs = encoder(inputs)
    symbolic = encoder(encoder.inputs)
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  compute_dtype = tf.bfloat16 if policy == 'mixed_bfloat16' else tf.float16
  # As Model Garden: sequence outputs float32 (its blocks end in a float32 LayerNorm), the
  # pooler in the compute dtype; the same on eager and on symbolic (tf_keras.Input) calls.
  for result in (outputs, symbolic):
    assert result['sequence_output'].dtype == tf.float32
    assert all(x.dtype == tf.float32 for x in result['encoder_outputs'])
    assert result['pooled_output'].dtype == compute_dtype
  assert all(v.dtype == tf.float32 for v in encoder.variables)
  # Post-LN outputs are O(1): low precision stays close to the float32 result.
  atol = 0.15 if policy == 'mixed_bfloat16' else 0.02
  np.testing.assert_allclose(outputs['sequence_output'], expected['sequence_output'], atol=atol)
  np.testing.assert_allclose(tf.cast(outputs['pooled_output'], tf.float32),
                             expected['pooled_output'], atol=atol)


@pytest.mark.slow
def test_xla_compiles_with_and_without_mixed_precision():
  word_ids, mask, type_ids = _inputs()
  inputs = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  encoder = _encoder(output_dropout=0.1, attention_dropout=0.1)
  eager = encoder(inputs)['sequence_output']
  compiled = tf.function(lambda x: encoder(x)['sequence_output'], jit_compile=True)(inputs)
  np.testing.assert_allclose(compiled, eager, atol=1e-4)
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:  # with dropout active, which XLA must compile too
    bf16 = _encoder(output_dropout=0.1, attention_dropout=0.1)
    out = tf.function(lambda x: bf16(x, training=True)['pooled_output'], jit_compile=True)(inputs)
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert out.dtype == tf.bfloat16 and out.shape == (3, HIDDEN)


@pytest.mark.slow
def test_builds_and_trains_under_a_distribution_strategy():
  strategy = tf.distribute.MirroredStrategy(['/cpu:0'])
  word_ids, mask, type_ids = _inputs()
  inputs = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  with strategy.scope():
    encoder = _encoder()
    encoder(inputs)
    optimizer = tf_keras.optimizers.SGD(0.1)

  @tf.function
  def step(batch):
    def replica_step(batch):
      with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(encoder(batch, training=True)['pooled_output']))
      grads = tape.gradient(loss, encoder.trainable_variables)
      optimizer.apply_gradients(zip(grads, encoder.trainable_variables))
      return loss
    return strategy.run(replica_step, args=(batch,))

  before = encoder.get_embedding_table().numpy().copy()
  loss = step(inputs)
  assert np.isfinite(float(strategy.reduce('SUM', loss, axis=None)))
  assert isinstance(encoder.get_embedding_table(), tf.distribute.DistributedValues)
  assert not np.allclose(before, encoder.get_embedding_table().numpy())


def test_missing_input_is_named():
  word_ids, mask, _ = _inputs()
  with pytest.raises(ValueError, match=r"lack \['input_type_ids'\]"):
    _encoder()(dict(input_word_ids=word_ids, input_mask=mask))


def test_bert_encoder_v2_always_returns_dicts():
  word_ids, mask, type_ids = _inputs()
  encoder = networks.BertEncoderV2(**testing.tiny_kwargs(vocab_size=VOCAB, num_layers=1,
                                                         max_sequence_length=16))
  outputs = encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  assert outputs['sequence_output'].shape == (3, SEQ, HIDDEN)
  rebuilt = networks.BertEncoderV2.from_config(encoder.get_config())
  assert isinstance(rebuilt, networks.BertEncoderV2) and rebuilt.get_config()['dict_outputs']


def test_heads_that_do_not_divide_the_hidden_size_match_numpy():
  # Model Garden allows it: 3 heads of 16 // 3 = 5 dimensions, projected back to 16.
  encoder = _encoder(num_attention_heads=3)
  word_ids, mask, type_ids = _inputs()
  outputs = encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  query = encoder.transformer_layers[0]._attention_layer._query_dense.kernel  # pylint: disable=protected-access
  assert query.shape == (HIDDEN, 3, 5)
  sequence, pooled = numpy_bert.encoder_forward(encoder, word_ids, mask, type_ids)
  np.testing.assert_allclose(outputs['sequence_output'], sequence, atol=1e-5)
  np.testing.assert_allclose(outputs['pooled_output'], pooled, atol=1e-5)


def test_bad_head_count_is_named():
  with pytest.raises(ValueError, match='num_attention_heads must be between 1 and hidden_size 16, '
                                       'found 17'):
    _encoder(num_attention_heads=17)


@pytest.mark.slow
def test_symbolic_inputs_make_a_functional_model_with_the_same_outputs(tmp_path):
  word_ids, mask, type_ids = _inputs()
  data = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  for cls in (networks.BertEncoder, networks.BertEncoderV2):
    encoder = cls(**testing.tiny_kwargs(vocab_size=VOCAB, max_sequence_length=16,
                                        dict_outputs=True))
    # Model Garden's: the functional BertEncoder's inputs are a list, BertEncoderV2's a dict.
    inputs = encoder.inputs if cls is networks.BertEncoder else list(encoder.inputs.values())
    assert [x.name for x in inputs] == ['input_word_ids', 'input_mask', 'input_type_ids']
    assert all(x.shape.as_list() == [None, None] and x.dtype == tf.int32 for x in inputs)
    model = tf_keras.Model(encoder.inputs, encoder(encoder.inputs))
    eager = encoder(data)
    functional = model(data)
    np.testing.assert_allclose(functional['sequence_output'], eager['sequence_output'], atol=1e-6)
    np.testing.assert_allclose(functional['pooled_output'], eager['pooled_output'], atol=1e-6)
    # The functional model saves and reloads (Keras v3 format) with the same outputs.
    path = str(tmp_path / f'{cls.__name__}.keras')
    model.save(path)
    reloaded = tf_keras.models.load_model(path)
    np.testing.assert_allclose(reloaded(data)['pooled_output'], eager['pooled_output'], atol=1e-6)


def test_build_creates_the_variables_and_list_outputs_add_attention_scores():
  encoder = _encoder(dict_outputs=False, return_attention_scores=True, name='enc')
  encoder.build(dict(input_word_ids=(None, SEQ), input_mask=(None, SEQ),
                     input_type_ids=(None, SEQ)))
  # Every variable exists, named as Model Garden's (no encoder scope).
  assert encoder.built and len(encoder.weights) == 5 + 2 * 16 + 2
  names = {v.name for v in encoder.weights}
  assert {'word_embeddings/embeddings:0', 'pooler_transform/kernel:0',
          'transformer/layer_1/self_attention/query/kernel:0'} <= names, sorted(names)
  word_ids, mask, type_ids = _inputs()
  sequence, pooled, scores = encoder([word_ids, mask, type_ids])
  assert sequence.shape == (3, SEQ, HIDDEN) and pooled.shape == (3, HIDDEN)
  assert len(scores) == 2 and scores[0].shape == (3, 2, SEQ, SEQ)


def test_word_embeddings_can_replace_word_ids():
  encoder = _encoder()
  word_ids, mask, type_ids = _inputs()
  expected = encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids))
  embeddings = encoder.get_embedding_layer()(word_ids)
  outputs = encoder(dict(input_word_embeddings=embeddings, input_mask=mask,
                         input_type_ids=type_ids))
  np.testing.assert_allclose(outputs['sequence_output'], expected['sequence_output'], atol=1e-6)


def test_model_garden_legacy_keywords_are_accepted():
  legacy = networks.BertEncoder(vocab_size=50, hidden_size=16, num_layers=1, num_attention_heads=2,
                                intermediate_size=24, activation='relu', dropout_rate=0.0,
                                attention_dropout_rate=0.2, sequence_length=8)
  config = legacy.get_config()
  assert (config['inner_dim'], config['inner_activation'], config['output_dropout'],
          config['attention_dropout']) == (24, 'relu', 0.0, 0.2)
  # Each legacy name is logged once per process.
  assert set(bert_encoder._LEGACY_ARGUMENTS) <= bert_encoder._warned_legacy  # pylint: disable=protected-access
  with pytest.raises(TypeError, match='nope'):
    networks.BertEncoder(vocab_size=50, hidden_size=16, num_layers=1, num_attention_heads=2,
                         nope=1)


def test_dense_inputs_follow_the_word_embeddings():
  encoder = _encoder(with_dense_inputs=True)
  assert [x.name for x in encoder.inputs] == ['input_word_ids', 'input_mask', 'input_type_ids',
                                              'dense_inputs', 'dense_mask', 'dense_type_ids']
  word_ids, mask, type_ids = _inputs()
  rng = np.random.default_rng(1)
  dense = rng.normal(size=(3, 4, HIDDEN)).astype(np.float32)
  dense_mask = np.array([[1, 1, 1, 0]] * 3, np.int32)
  dense_types = np.ones((3, 4), np.int32)
  outputs = encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids,
                         dense_inputs=dense, dense_mask=dense_mask, dense_type_ids=dense_types))
  assert outputs['sequence_output'].shape == (3, SEQ + 4, HIDDEN)
  # The same as giving the concatenated embeddings, masks and types directly.
  rows = tf.gather(encoder.get_embedding_table(), word_ids).numpy()
  expected = encoder(dict(input_word_embeddings=np.concatenate([rows, dense], 1),
                          input_mask=np.concatenate([mask, dense_mask], 1),
                          input_type_ids=np.concatenate([type_ids, dense_types], 1)))
  np.testing.assert_allclose(outputs['sequence_output'], expected['sequence_output'], atol=1e-6)
  with pytest.raises(ValueError, match=r"lack \['dense_mask'\]"):
    encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids,
                 dense_inputs=dense, dense_type_ids=dense_types))
  assert networks.BertEncoder.from_config(encoder.get_config()).get_config()['with_dense_inputs']


def _packed_rows(seq, lengths, seed=4):
  """Word ids, mask, position ids and document numbers of rows packed with `lengths`."""
  rng = np.random.default_rng(seed)
  positions, documents, mask = (np.zeros((len(lengths), seq), np.int32) for _ in range(3))
  for row, row_lengths in enumerate(lengths):
    start = 0
    for number, length in enumerate(row_lengths, 1):
      positions[row, start:start + length] = np.arange(length)
      documents[row, start:start + length] = number
      mask[row, start:start + length] = 1
      start += length
  word_ids = rng.integers(1, VOCAB, (len(lengths), seq)).astype(np.int32) * mask
  return word_ids, mask, positions, documents


@pytest.mark.slow
@pytest.mark.parametrize('norm_first', [False, True])
def test_packed_documents_a_perturbed_document_leaves_the_others_unchanged(norm_first):
  """Packed rows: changing every token of one document changes no other document's outputs,
  and each document's outputs equal those it has alone in a row."""
  encoder = _encoder(packed_documents=True, norm_first=norm_first)
  seq = 12
  word_ids, mask, positions, documents = _packed_rows(seq, [[3, 6, 3], [4, 6]])
  types = np.zeros_like(mask)
  inputs = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=types,
                position_ids=positions)
  before = encoder(inputs)['sequence_output'].numpy()
  changed = word_ids.copy()
  second = documents == 2
  changed[second] = (changed[second] + 1 + np.arange(second.sum()) % (VOCAB - 2)) % VOCAB
  after = encoder(dict(inputs, input_word_ids=changed))['sequence_output'].numpy()
  others = (mask > 0) & ~second
  np.testing.assert_allclose(after[others], before[others], atol=1e-5)
  assert np.abs(after[second] - before[second]).max() > 1e-2
  for row, number in ((0, 1), (0, 3), (1, 2)):
    where = documents[row] == number
    ones = np.ones([1, where.sum()], np.int32)
    alone = encoder(dict(input_word_ids=word_ids[row][where][None], input_mask=ones,
                         input_type_ids=0 * ones))['sequence_output']
    np.testing.assert_allclose(alone.numpy()[0], before[row][where], atol=1e-5)
  # ModernBertEncoder's input name works too.
  renamed = dict(inputs, input_position_ids=positions)
  del renamed['position_ids']
  np.testing.assert_allclose(encoder(renamed)['sequence_output'], before, atol=1e-6)


def test_packed_documents_is_off_by_default_and_adds_no_variable(tmp_path):
  plain, packed = _encoder(), _encoder(packed_documents=True)
  assert [v.name for v in plain.weights] == [v.name for v in packed.weights]
  assert not plain.get_config()['packed_documents']
  # A default encoder's checkpoint restores into a packed one; rows without position ids (and
  # the default encoder given position ids, which it ignores) give the same outputs.
  path = tf.train.Checkpoint(encoder=plain).write(str(tmp_path / 'ckpt'))
  tf.train.Checkpoint(encoder=packed).read(path).assert_existing_objects_matched()
  word_ids, mask, type_ids = _inputs()
  inputs = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  expected = plain(inputs)['sequence_output']
  np.testing.assert_allclose(packed(inputs)['sequence_output'], expected, atol=1e-6)
  restarts = np.tile(np.arange(SEQ) % 3, (3, 1)).astype(np.int32)
  np.testing.assert_allclose(plain(dict(inputs, position_ids=restarts))['sequence_output'],
                             expected, atol=1e-6)
  rebuilt = networks.BertEncoder.from_config(packed.get_config())
  assert rebuilt.get_config()['packed_documents']
  with pytest.raises(ValueError, match='packed_documents and with_dense_inputs'):
    _encoder(packed_documents=True, with_dense_inputs=True)


def _model_garden_weight_names(num_layers, embedding_width=None):
  """Model Garden's BertEncoder `weights` (and `get_weights()`) order, by variable name."""
  names = ['word_embeddings/embeddings', 'position_embedding/embeddings',
           'type_embeddings/embeddings', 'embeddings/layer_norm/gamma',
           'embeddings/layer_norm/beta']
  if embedding_width:
    names += ['embedding_projection/kernel', 'embedding_projection/bias']
  for i in range(num_layers):
    block = f'transformer/layer_{i}'
    for dense in ('query', 'key', 'value', 'attention_output'):
      names += [f'{block}/self_attention/{dense}/kernel', f'{block}/self_attention/{dense}/bias']
    names += [f'{block}/self_attention_layer_norm/gamma', f'{block}/self_attention_layer_norm/beta']
    for dense in ('intermediate', 'output'):
      names += [f'{block}/{dense}/kernel', f'{block}/{dense}/bias']
    names += [f'{block}/output_layer_norm/gamma', f'{block}/output_layer_norm/beta']
  return [f'{name}:0' for name in names + ['pooler_transform/kernel', 'pooler_transform/bias']]


@pytest.mark.parametrize('embedding_width', [None, 8])
def test_is_model_gardens_functional_model(embedding_width):
  """Inputs, outputs, layers and weights in the order of Model Garden's functional BertEncoder
  (tf-models-official 2.20, same config), without its weightless `SelfAttentionMask`: our blocks
  take the [batch, seq] mask. The embedding norm is a `LayerNormalization` subclass (the same
  variables, one fused kernel each way)."""
  encoder = _encoder(embedding_width=embedding_width, dict_outputs=False)
  assert [x.name for x in encoder.inputs] == ['input_word_ids', 'input_mask', 'input_type_ids']
  assert [x.shape.as_list() for x in encoder.outputs] == [[None, None, HIDDEN], [None, HIDDEN]]
  projection = ['Dense:embedding_projection'] if embedding_width else []
  assert type(encoder.layers[6]) is layers.FusedLayerNormalization
  assert isinstance(encoder.layers[6], tf_keras.layers.LayerNormalization)
  def keras_class(layer):
    fused = isinstance(layer, layers.FusedLayerNormalization)
    return 'LayerNormalization' if fused else type(layer).__name__

  assert [f'{keras_class(layer)}:{layer.name}' for layer in encoder.layers] == [
      'InputLayer:input_word_ids', 'OnDeviceEmbedding:word_embeddings',
      'InputLayer:input_type_ids', 'PositionEmbedding:position_embedding',
      'OnDeviceEmbedding:type_embeddings', f'Add:{encoder.layers[5].name}',
      'LayerNormalization:embeddings/layer_norm', 'Dropout:embedding_dropout', *projection,
      'InputLayer:input_mask', 'TransformerEncoderBlock:transformer/layer_0',
      'TransformerEncoderBlock:transformer/layer_1',
      f'SlicingOpLambda:{encoder.layers[-2].name}', 'Dense:pooler_transform']
  expected = _model_garden_weight_names(2, embedding_width)
  assert [w.name for w in encoder.weights] == expected
  assert [w.shape for w in encoder.get_weights()] == [tuple(w.shape) for w in encoder.weights]
  as_dict = _encoder(embedding_width=embedding_width)
  assert sorted(as_dict.output) == ['encoder_outputs', 'pooled_output', 'sequence_output']
  assert [w.name for w in as_dict.weights] == expected


@pytest.mark.parametrize('kwargs', [dict(), dict(norm_first=True, embedding_width=8),
                                    dict(return_attention_scores=True, output_range=2)])
def test_a_walk_of_the_layer_graph_rebuilds_the_encoder(kwargs):
  encoder = _encoder(**kwargs)
  word_ids, mask, type_ids = _inputs()
  data = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  expected = encoder(data)
  walked = testing.walk_layer_graph(encoder, data)
  assert sorted(walked) == sorted(expected)
  for got, want in zip(tf.nest.flatten(walked), tf.nest.flatten(expected)):
    np.testing.assert_allclose(got, want, atol=1e-6)
  # Walked on the symbolic inputs, the layers make a functional model of their own.
  rebuilt = tf_keras.Model(encoder.inputs, testing.walk_layer_graph(encoder, encoder.inputs))
  np.testing.assert_allclose(rebuilt(data)['sequence_output'], expected['sequence_output'],
                             atol=1e-6)


def _replace_block_sub_layers(encoder):
  """Replaces every block's sub-layers by copies from their configs under new names, the way
  differential-privacy tools make layer names unique (the copies are unbuilt: new weights)."""
  # pylint: disable=protected-access
  def copy(layer, name):
    return type(layer).from_config(dict(layer.get_config(), name=name))

  for block in encoder.layers:
    if not isinstance(block, layers.TransformerEncoderBlock):
      continue
    for name in ('_inner_dropout_layer', '_attention_dropout', '_attention_layer',
                 '_attention_layer_norm', '_intermediate_dense', '_output_dense',
                 '_output_dropout', '_output_layer_norm'):
      setattr(block, name, copy(getattr(block, name), f'{block.name}/{name}'))
    block._attention_layer._dropout_layer = copy(block._attention_layer._dropout_layer,
                                                 f'{block.name}/attention_inner_dropout')
    block._intermediate_activation_layer = tf_keras.layers.Activation(
        block._inner_activation, name=f'{block.name}/intermediate_activation')


def test_blocks_compute_with_the_sub_layers_their_attributes_hold():
  """Model Garden's sub-layer attributes: replaced by copies (new, unbuilt weights), the blocks
  compute with the copies; given the old weights, the encoder's outputs come back."""
  encoder = _encoder()
  word_ids, mask, type_ids = _inputs()
  data = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  expected = encoder(data)['sequence_output'].numpy()
  old = {block.name: [layer.get_weights() for layer in _weighted_sub_layers(block)]
         for block in encoder.transformer_layers}
  _replace_block_sub_layers(encoder)
  encoder(data)  # builds the copies
  for block in encoder.transformer_layers:
    for layer, weights in zip(_weighted_sub_layers(block), old[block.name]):
      layer.set_weights([0.5 * w for w in weights])
  changed = encoder(data)['sequence_output'].numpy()
  assert np.isfinite(changed).all() and np.abs(changed - expected).max() > 1e-2
  for block in encoder.transformer_layers:
    for layer, weights in zip(_weighted_sub_layers(block), old[block.name]):
      layer.set_weights(weights)
  np.testing.assert_allclose(encoder(data)['sequence_output'], expected, atol=1e-5)


def _weighted_sub_layers(block):
  # pylint: disable=protected-access
  return [block._attention_layer._query_dense, block._attention_layer._key_dense,
          block._attention_layer._value_dense, block._attention_layer._output_dense,
          block._attention_layer_norm, block._intermediate_dense, block._output_dense,
          block._output_layer_norm]


@pytest.mark.parametrize('norm_first', [False, True])
def test_blocks_expand_into_their_sub_layers_on_symbolic_inputs(norm_first):
  """A graph walk that calls each block's `call` on symbolic inputs (as graph-rewriting tools do,
  after making the sub-layers' names unique) rebuilds the encoder from the blocks' sub-layers:
  the same weights, the same outputs."""
  encoder = _encoder(norm_first=norm_first, output_dropout=0.1, attention_dropout=0.1)
  _replace_block_sub_layers(encoder)
  expand = lambda layer, args, kwargs: (
      layer.call(*args, **kwargs) if isinstance(layer, layers.TransformerEncoderBlock)
      else layer(*args, **kwargs))
  expanded = tf_keras.Model(encoder.inputs,
                            testing.walk_layer_graph(encoder, encoder.inputs, call=expand))
  assert not any(isinstance(layer, layers.TransformerEncoderBlock) for layer in expanded.layers)
  assert {layer.name for layer in expanded.layers} >= {
      'transformer/layer_1/_intermediate_dense', 'transformer/layer_1/intermediate_activation'}
  # The same variables (the encoder also still tracks each block's replaced attention norm,
  # which `_attention_layer_norm_kv` keeps referring to, as in Model Garden).
  assert len(expanded.trainable_weights) == 5 + 2 * 16 + 2 + (2 if norm_first else 0)
  assert {id(w) for w in expanded.trainable_weights} <= {id(w) for w in encoder.trainable_weights}
  word_ids, mask, type_ids = _inputs()
  data = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  for key in ('sequence_output', 'pooled_output'):
    np.testing.assert_allclose(expanded(data, training=False)[key],
                               encoder(data, training=False)[key], atol=1e-5)


@pytest.mark.parametrize('cls', [networks.BertEncoder, networks.BertEncoderV2])
def test_output_positions_compute_the_last_layer_at_those_positions(cls):
  kwargs = dict(dict_outputs=True) if cls is networks.BertEncoder else {}
  encoder = cls(**dict(
      testing.tiny_kwargs(vocab_size=VOCAB, max_sequence_length=16, type_vocab_size=2,
                          output_dropout=0.0, attention_dropout=0.0), **kwargs))
  word_ids, mask, type_ids = _inputs()
  inputs = dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids)
  full = encoder(inputs)
  positions = tf.constant([[0, 4, 2], [0, 1, 1], [0, 7, 3]], tf.int32)
  out = encoder(dict(inputs, output_positions=positions))
  assert out['sequence_output'].shape == (3, 3, HIDDEN)
  np.testing.assert_allclose(out['sequence_output'],
                             tf.gather(full['sequence_output'], positions, batch_dims=1),
                             atol=1e-5)
  np.testing.assert_allclose(out['pooled_output'], full['pooled_output'], atol=1e-5)
  for got, want in zip(out['encoder_outputs'][:-1], full['encoder_outputs'][:-1]):
    np.testing.assert_allclose(got, want, atol=1e-5)  # the layers before the last: every position


def test_output_positions_and_output_range_are_refused_together():
  encoder = _encoder(output_range=1)
  word_ids, mask, type_ids = _inputs()
  with pytest.raises(ValueError, match='output_positions and output_range=1 cannot be combined'):
    encoder(dict(input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids,
                 output_positions=tf.zeros([3, 2], tf.int32)))
