"""Tests for official/nlp/serving/serving_modules.py, export_savedmodel_util.py and the
export-module lookup of export_savedmodel.py (Model Garden's serving API)."""

import os

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.configs import bert
from official.nlp.configs import encoders
from official.nlp.data import question_answering_dataloader as qa_loader
from official.nlp.data import sentence_prediction_dataloader as sp_loader
from official.nlp.data import tagging_dataloader
from official.nlp.serving import export_savedmodel
from official.nlp.serving import export_savedmodel_util
from official.nlp.serving import serving_modules
from official.nlp.tasks import masked_lm
from official.nlp.tasks import question_answering
from official.nlp.tasks import sentence_prediction
from official.nlp.tasks import tagging
from official.nlp.tools import tokenization
from tests import testing
from tests.paths import ROOT

SEQ = 8


def _encoder(hidden_size=16):
  return encoders.EncoderConfig(bert=encoders.BertEncoderConfig(**testing.tiny_config(
      vocab_size=40, hidden_size=hidden_size, num_layers=1, max_position_embeddings=16)))


def _inputs(batch=2, seq=5):
  ids = np.random.default_rng(0).integers(1, 40, (batch, seq)).astype(np.int32)
  ids[0, -2:] = 0  # padding
  return {'input_word_ids': ids, 'input_mask': (ids != 0).astype(np.int32),
          'input_type_ids': np.zeros_like(ids)}


def _example(features):
  return tf.train.Example(features=tf.train.Features(feature={
      name: tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))
      for name, values in features.items()})).SerializeToString()


def _classifier_task():
  config = sentence_prediction.SentencePredictionConfig(
      model=sentence_prediction.ModelConfig(encoder=_encoder(), num_classes=3),
      train_data=sp_loader.SentencePredictionDataConfig(input_path='dummy', seq_length=SEQ))
  return sentence_prediction.SentencePredictionTask(config)


@pytest.mark.slow
def test_sentence_prediction_export_round_trip(tmp_path):
  task = _classifier_task()
  model = task.build_model()
  tf.train.Checkpoint(model=model).save(str(tmp_path / 'ckpt'))
  expected = model(_inputs(), training=False).numpy()
  for variable in model.trainable_variables:  # the export must read the checkpoint's weights
    variable.assign(tf.zeros_like(variable))
  module_cls = export_savedmodel.lookup_export_module(task)
  assert module_cls is serving_modules.SentencePrediction
  module = module_cls(params=module_cls.Params(inputs_only=False, parse_sequence_length=5,
                                               use_v2_feature_names=False), model=model)
  export_dir = export_savedmodel_util.export(
      module, {'serve': 'serving_default', 'serve_probability': 'probs',
               'serve_examples': 'examples'},
      export_savedmodel_dir=str(tmp_path / 'export'), checkpoint_path=str(tmp_path))
  assert os.path.dirname(export_dir) == str(tmp_path / 'export')  # timestamped sub-directory
  loaded = tf.saved_model.load(export_dir)
  assert sorted(loaded.signatures) == ['examples', 'probs', 'serving_default']
  outputs = loaded.signatures['serving_default'](
      **{k: tf.constant(v) for k, v in _inputs().items()})
  np.testing.assert_allclose(outputs['outputs'].numpy(), expected, rtol=1e-5, atol=1e-6)
  probs = loaded.signatures['probs'](**{k: tf.constant(v) for k, v in _inputs().items()})
  softmax = np.exp(expected) / np.exp(expected).sum(-1, keepdims=True)
  np.testing.assert_allclose(probs['outputs'].numpy(), softmax, rtol=1e-5)
  inputs = _inputs()
  examples = [_example({'input_ids': inputs['input_word_ids'][i],
                        'input_mask': inputs['input_mask'][i],
                        'segment_ids': inputs['input_type_ids'][i]}) for i in range(2)]
  from_examples = loaded.signatures['examples'](tf.constant(examples))
  np.testing.assert_allclose(from_examples['outputs'].numpy(), expected, rtol=1e-5, atol=1e-6)


def test_sentence_prediction_inputs_only_derives_mask_and_types():
  task = _classifier_task()
  model = task.build_model()
  module = serving_modules.SentencePrediction(serving_modules.SentencePrediction.Params(), model)
  signature = module.get_inference_signatures({'serve': 'serving_default'})['serving_default']
  inputs = _inputs()
  outputs = signature(input_word_ids=tf.constant(inputs['input_word_ids']))
  np.testing.assert_allclose(outputs['outputs'].numpy(), model(inputs, training=False).numpy(),
                             rtol=1e-5, atol=1e-6)
  with pytest.raises(ValueError, match="unknown function key 'nope'"):
    module.get_inference_signatures({'nope': 'x'})


@pytest.mark.slow
def test_masked_lm_and_tagging_signatures(tmp_path):
  config = masked_lm.MaskedLMConfig(model=bert.PretrainerConfig(
      encoder=_encoder(), cls_heads=[bert.ClsHeadConfig(inner_dim=8, num_classes=2, name='foo')]))
  task = masked_lm.MaskedLMTask(config)
  model = task.build_model()
  module_cls = export_savedmodel.lookup_export_module(task)
  module = module_cls(module_cls.Params(cls_head_name='foo', parse_sequence_length=5,
                                        max_predictions_per_seq=2), model)
  export_dir = export_savedmodel_util.export(
      module, ['serve'], str(tmp_path / 'mlm'), timestamped=False)
  assert export_dir == str(tmp_path / 'mlm')
  inputs = dict(_inputs(), masked_lm_positions=np.array([[1, 2], [0, 3]], np.int32))
  outputs = tf.saved_model.load(export_dir).signatures['serving_default'](
      **{k: tf.constant(v) for k, v in inputs.items()})
  expected = model(inputs, training=False)
  np.testing.assert_allclose(outputs['classification'].numpy(), expected['foo'].numpy(), rtol=1e-5,
                             atol=1e-6)
  assert outputs['mlm_logits'].shape == (2, 2, 40)

  tag_config = tagging.TaggingConfig(
      model=tagging.ModelConfig(encoder=_encoder()), class_names=['O', 'B-X', 'I-X'],
      train_data=tagging_dataloader.TaggingDataConfig(input_path='dummy', seq_length=SEQ))
  tag_task = tagging.TaggingTask(tag_config)
  tag_model = tag_task.build_model()
  module_cls = export_savedmodel.lookup_export_module(tag_task)
  module = module_cls(module_cls.Params(output_encoder_outputs=True, parse_sequence_length=5),
                      tag_model)
  signatures = module.get_inference_signatures({'serve': 'a', 'serve_examples': 'b'})
  outputs = signatures['a'](**{k: tf.constant(v) for k, v in _inputs().items()})
  np.testing.assert_allclose(outputs['logits'].numpy(),
                             tag_model(_inputs(), training=False)['logits'].numpy(),
                             rtol=1e-5, atol=1e-6)
  assert outputs['encoder_outputs'].shape == (2, 5, 16)
  inputs = _inputs()
  examples = [_example({k: inputs[k][i] for k in inputs}) for i in range(2)]  # v2 names
  np.testing.assert_allclose(signatures['b'](tf.constant(examples))['logits'].numpy(),
                             outputs['logits'].numpy(), rtol=1e-5, atol=1e-6)


def test_export_errors(tmp_path):
  task = _classifier_task()
  module = serving_modules.SentencePrediction(serving_modules.SentencePrediction.Params(),
                                              task.build_model())
  with pytest.raises(ValueError, match='must hold one key'):
    export_savedmodel_util.export(module, ['serve', 'serve_examples'], str(tmp_path / 'x'))
  with pytest.raises(FileNotFoundError, match='no checkpoint found'):
    export_savedmodel_util.export(module, ['serve'], str(tmp_path / 'x'),
                                  checkpoint_path=str(tmp_path / 'missing'))
  with pytest.raises(ValueError, match='no export module for the task str'):
    export_savedmodel.lookup_export_module('not a task')
  with pytest.raises(ValueError, match="no registered task config matches task_name 'Nope'"):
    export_savedmodel.create_export_module(task_name='Nope', config_file=None, serving_params={})


def test_create_export_module_builds_the_model_on_first_use(tmp_path):
  config_file = tmp_path / 'task.yaml'
  config_file.write_text('task:\n  model:\n    num_classes: 2\n    encoder:\n      bert:\n'
                         '        vocab_size: 40\n        hidden_size: 16\n        num_layers: 1\n'
                         '        num_attention_heads: 2\n        intermediate_size: 32\n')
  module = export_savedmodel.create_export_module(
      task_name='SentencePrediction', config_file=str(config_file),
      serving_params={'inputs_only': False, 'parse_sequence_length': 10})
  assert module.name == 'sentence_prediction' and module.params.parse_sequence_length == 10
  assert module._model is None  # pylint: disable=protected-access
  assert module.model.checkpoint_items['encoder'].get_embedding_table().shape == (40, 16)


# ---- Raw text in the graph (tensorflow-text, the [text] extra) and Model Garden's other modules.

TEXT_VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'hello', 'world', ',', '!', 'good',
              '##bye']


def _python_packed(tokenizer, texts, seq=SEQ):
  """BERT inputs of one example (a list of segments) tokenized in Python: the reference."""
  ids, types = [2], [0]
  for index, text in enumerate(texts):
    pieces = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text)) + [3]
    ids += pieces
    types += [index] * len(pieces)
  pad = seq - len(ids)
  return {'input_word_ids': np.array([ids + [0] * pad], np.int32),
          'input_mask': np.array([[1] * len(ids) + [0] * pad], np.int32),
          'input_type_ids': np.array([types + [0] * pad], np.int32)}


@pytest.mark.slow
def test_export_with_a_raw_string_signature(tmp_path):
  """vocab.txt -> BertTokenizer + BertPackInputs in the graph; the reloaded SavedModel gives the
  model's logits on the ids that the Python tokenizer makes of the same text."""
  vocab_file = tmp_path / 'vocab.txt'
  vocab_file.write_text('\n'.join(TEXT_VOCAB) + '\n')
  model = _classifier_task().build_model()
  params = serving_modules.SentencePrediction.Params(
      parse_sequence_length=SEQ, vocab_file=str(vocab_file), lower_case=True)
  module = serving_modules.SentencePrediction(params, model=model)
  export_dir = export_savedmodel_util.export(
      module, {'serve_text': 'serving_default', 'serve': 'ids'}, str(tmp_path / 'export'),
      timestamped=False)
  vocab_file.rename(tmp_path / 'moved.txt')  # the export carries its own copy of the vocabulary
  loaded = tf.saved_model.load(export_dir)
  signature = loaded.signatures['serving_default']
  assert list(signature.structured_input_signature[1]) == ['text']
  outputs = signature(text=tf.constant(['hello world', 'Hello, GOODBYE!']))['outputs'].numpy()

  tokenizer = tokenization.FullTokenizer(str(tmp_path / 'moved.txt'), do_lower_case=True)
  for row, text in enumerate(['hello world', 'Hello, GOODBYE!']):
    inputs = _python_packed(tokenizer, [text])
    expected = model(inputs, training=False).numpy()
    np.testing.assert_allclose(outputs[row:row + 1], expected, rtol=1e-5, atol=1e-6)
  assert _python_packed(tokenizer, ['hello world'])['input_word_ids'].tolist() == [
      [2, 5, 6, 3, 0, 0, 0, 0]]
  by_ids = loaded.signatures['ids'](input_word_ids=tf.constant([[2, 5, 6, 3, 0, 0, 0, 0]]))
  np.testing.assert_allclose(by_ids['outputs'].numpy(), outputs[:1], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_text_pairs_from_strings_and_from_examples(tmp_path):
  vocab_file = tmp_path / 'vocab.txt'
  vocab_file.write_text('\n'.join(TEXT_VOCAB) + '\n')
  model = _classifier_task().build_model()
  params = serving_modules.SentencePrediction.Params(
      inputs_only=False, parse_sequence_length=SEQ, vocab_file=str(vocab_file),
      text_fields=['premise', 'hypothesis'])
  module = serving_modules.SentencePrediction(params, model=model)
  signatures = module.get_inference_signatures({'serve_text': 'text',
                                                'serve_text_examples': 'examples'})
  specs = signatures['text'].structured_input_signature[0]  # one string input per text field
  assert [spec.name for spec in specs] == ['premise', 'hypothesis']
  from_text = signatures['text'](premise=tf.constant(['hello world']),
                                 hypothesis=tf.constant(['goodbye']))['outputs'].numpy()
  tokenizer = tokenization.FullTokenizer(str(vocab_file))
  inputs = _python_packed(tokenizer, ['hello world', 'goodbye'])
  assert inputs['input_type_ids'].tolist() == [[0, 0, 0, 0, 1, 1, 1, 0]]
  np.testing.assert_allclose(from_text, model(inputs, training=False).numpy(), rtol=1e-5,
                             atol=1e-6)
  example = tf.train.Example(features=tf.train.Features(feature={
      name: tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
      for name, value in (('premise', b'hello world'), ('hypothesis', b'goodbye'))}))
  from_examples = signatures['examples'](tf.constant([example.SerializeToString()]))
  np.testing.assert_allclose(from_examples['outputs'].numpy(), from_text, rtol=1e-5, atol=1e-6)


def test_text_function_errors(tmp_path):
  model = _classifier_task().build_model()
  module = serving_modules.SentencePrediction(
      serving_modules.SentencePrediction.Params(parse_sequence_length=SEQ), model=model)
  with pytest.raises(ValueError, match='the text functions need params.vocab_file'):
    module.get_inference_signatures({'serve_text': 'x'})
  vocab_file = tmp_path / 'vocab.txt'
  vocab_file.write_text('\n'.join(TEXT_VOCAB) + '\n')
  with pytest.raises(ValueError, match='need params.parse_sequence_length'):
    serving_modules.SentencePrediction(serving_modules.SentencePrediction.Params(
        vocab_file=str(vocab_file), text_fields=['a']), model=model)
  with pytest.raises(ValueError, match='TF Hub preprocessing models are not supported'):
    serving_modules.SentencePrediction(serving_modules.SentencePrediction.Params(
        parse_sequence_length=SEQ, preprocessing_hub_module_url='https://tfhub.dev/x',
        text_fields=['a']), model=model)


def test_inputs_only_examples_need_word_ids_alone_and_v1_names():
  model = _classifier_task().build_model()
  module = serving_modules.SentencePrediction(serving_modules.SentencePrediction.Params(
      inputs_only=True, parse_sequence_length=5, use_v2_feature_names=False), model=model)
  function = module.get_inference_signatures({'serve_examples': 'x'})['x']
  inputs = _inputs()
  examples = [_example({'input_ids': inputs['input_word_ids'][i]}) for i in range(2)]
  np.testing.assert_allclose(function(tf.constant(examples))['outputs'].numpy(),
                             model(inputs, training=False).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_question_answering_module(tmp_path):
  task = question_answering.QuestionAnsweringTask(question_answering.QuestionAnsweringConfig(
      model=question_answering.ModelConfig(encoder=_encoder()), validation_data=None,
      train_data=qa_loader.QADataConfig(seq_length=SEQ)))
  model = task.build_model()
  module_cls = export_savedmodel.lookup_export_module(task)
  assert module_cls is serving_modules.QuestionAnswering
  module = module_cls(module_cls.Params(parse_sequence_length=5, use_v2_feature_names=False),
                      model)
  export_dir = export_savedmodel_util.export(
      module, {'serve': 'serving_default', 'serve_examples': 'examples'}, str(tmp_path / 'qa'),
      timestamped=False)
  loaded = tf.saved_model.load(export_dir)
  inputs = _inputs()
  outputs = loaded.signatures['serving_default'](**{k: tf.constant(v) for k, v in inputs.items()})
  start, end = model(inputs, training=False)
  np.testing.assert_allclose(outputs['start_logits'].numpy(), start.numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(outputs['end_logits'].numpy(), end.numpy(), rtol=1e-5, atol=1e-6)
  examples = [_example({'input_ids': inputs['input_word_ids'][i],
                        'input_mask': inputs['input_mask'][i],
                        'segment_ids': inputs['input_type_ids'][i]}) for i in range(2)]
  from_examples = loaded.signatures['examples'](tf.constant(examples))
  np.testing.assert_allclose(from_examples['end_logits'].numpy(), end.numpy(), rtol=1e-5,
                             atol=1e-6)


def test_inference_step_gets_the_model_and_v1_tagging_input_names():
  tag_config = tagging.TaggingConfig(
      model=tagging.ModelConfig(encoder=_encoder()), class_names=['O', 'B-X'],
      train_data=tagging_dataloader.TaggingDataConfig(input_path='dummy', seq_length=SEQ))
  model = tagging.TaggingTask(tag_config).build_model()
  calls = []

  def doubled(inputs, model):
    calls.append(model)
    return {'logits': 2.0 * model(inputs, training=False)['logits']}

  preprocessor = tf.Module(name='pre')
  module = serving_modules.Tagging(
      serving_modules.Tagging.Params(use_v2_feature_names=False), model, doubled,
      preprocessor=preprocessor)
  assert module.preprocessor is preprocessor and module.postprocessor is None
  function = module.get_inference_signatures({'serve': 'x'})['x']
  assert [spec.name for spec in function.structured_input_signature[0]] == [
      'input_ids', 'input_mask', 'segment_ids']  # the SavedModel's input names
  inputs = _inputs()
  outputs = function(**{k: tf.constant(v) for k, v in inputs.items()})
  assert calls and calls[0] is model
  np.testing.assert_allclose(outputs['logits'].numpy(),
                             2.0 * model(inputs, training=False)['logits'].numpy(),
                             rtol=1e-5, atol=1e-6)


# ---- A ModernBERT encoder behind every export module.

def _modernbert_encoder():
  sizes = testing.tiny_config('modernbert', vocab_size=40, local_attention=4,
                              max_position_embeddings=16)
  return encoders.EncoderConfig(type='modernbert',
                                modernbert=encoders.ModernBertEncoderConfig(**sizes))


def _call(function, inputs):
  return {k: v.numpy() for k, v in function(**{k: tf.constant(v) for k, v in inputs.items()}
                                            ).items()}


@pytest.mark.slow
def test_masked_lm_module_of_a_pretrainer_without_heads_serves_mlm_logits(tmp_path):
  # ModernBERT's recipe has no next-sentence head: `classification` is left out, not an error.
  task = masked_lm.MaskedLMTask(masked_lm.MaskedLMConfig(model=bert.PretrainerConfig(
      encoder=_modernbert_encoder(), cls_heads=[])))
  model = task.build_model()
  module_cls = export_savedmodel.lookup_export_module(task)
  export_dir = export_savedmodel_util.export(module_cls(module_cls.Params(), model), ['serve'],
                                             str(tmp_path / 'mlm'), timestamped=False)
  inputs = dict(_inputs(), masked_lm_positions=np.array([[1, 2], [0, 3]], np.int32))
  outputs = _call(tf.saved_model.load(export_dir).signatures['serving_default'], inputs)
  assert sorted(outputs) == ['mlm_logits']
  np.testing.assert_allclose(outputs['mlm_logits'], model(inputs, training=False)['mlm_logits'],
                             rtol=1e-5, atol=1e-5)

  # A pretrainer with heads serves the named one; `cls_head_name: null` serves none of them.
  config = masked_lm.MaskedLMConfig(model=bert.PretrainerConfig(
      encoder=_encoder(), cls_heads=[bert.ClsHeadConfig(inner_dim=8, num_classes=2, name='foo')]))
  model = masked_lm.MaskedLMTask(config).build_model()
  module = serving_modules.MaskedLM(serving_modules.MaskedLM.Params(cls_head_name=None), model)
  function = module.get_inference_signatures({'serve': 's'})['s']
  assert sorted(_call(function, inputs)) == ['mlm_logits']
  module = serving_modules.MaskedLM(serving_modules.MaskedLM.Params(), model)
  with pytest.raises(ValueError, match=r"MaskedLM: the model has no head 'next_sentence' "
                     r"\(params.cls_head_name\)"):
    module.get_inference_signatures({'serve': 's'})


def _modernbert_tasks():
  encoder = _modernbert_encoder()
  yield sentence_prediction.SentencePredictionTask(sentence_prediction.SentencePredictionConfig(
      model=sentence_prediction.ModelConfig(encoder=encoder, num_classes=3),
      train_data=sp_loader.SentencePredictionDataConfig(input_path='dummy', seq_length=SEQ)))
  yield tagging.TaggingTask(tagging.TaggingConfig(
      model=tagging.ModelConfig(encoder=encoder), class_names=['O', 'B-X', 'I-X'],
      train_data=tagging_dataloader.TaggingDataConfig(input_path='dummy', seq_length=SEQ)))
  yield question_answering.QuestionAnsweringTask(question_answering.QuestionAnsweringConfig(
      model=question_answering.ModelConfig(encoder=encoder), validation_data=None,
      train_data=qa_loader.QADataConfig(seq_length=SEQ)))


def _model_outputs(model, inputs, names):
  """The model's outputs by the export's output names (its logits: a tensor, pair or dict)."""
  outputs = model(inputs, training=False)
  if isinstance(outputs, dict):
    return {name: outputs[name].numpy() for name in names}
  if isinstance(outputs, (list, tuple)):
    return {name: output.numpy() for name, output in zip(names, outputs)}
  return {names[0]: outputs.numpy()}


@pytest.mark.slow
def test_finetuning_modules_with_a_modernbert_encoder_round_trip(tmp_path):
  # Export module -> (the model's outputs it must reproduce, its parameters).
  cases = {serving_modules.SentencePrediction: (['outputs'], dict(inputs_only=False)),
           serving_modules.Tagging: (['logits'], dict(output_encoder_outputs=True)),
           serving_modules.QuestionAnswering: (['start_logits', 'end_logits'], {})}
  inputs = _inputs()
  examples = tf.constant([_example({k: inputs[k][i] for k in inputs}) for i in range(2)])
  for task in _modernbert_tasks():
    model = task.build_model()
    assert type(model.checkpoint_items['encoder']).__name__ == 'ModernBertEncoder'
    module_cls = export_savedmodel.lookup_export_module(task)
    names, params = cases[module_cls]
    expected = _model_outputs(model, inputs, names)
    ckpt_dir = tmp_path / module_cls.__name__
    tf.train.Checkpoint(model=model).save(str(ckpt_dir / 'ckpt'))
    for variable in model.trainable_variables:  # the export must read the checkpoint's weights
      variable.assign(tf.zeros_like(variable))
    export_dir = export_savedmodel_util.export(
        module_cls(module_cls.Params(parse_sequence_length=5, **params), model),
        {'serve': 'serving_default', 'serve_examples': 'examples'}, str(ckpt_dir / 'export'),
        checkpoint_path=str(ckpt_dir), timestamped=False)
    loaded = tf.saved_model.load(export_dir)
    outputs = _call(loaded.signatures['serving_default'], inputs)
    from_examples = {k: v.numpy() for k, v in loaded.signatures['examples'](examples).items()}
    for name, value in expected.items():
      np.testing.assert_allclose(outputs[name], value, rtol=1e-5, atol=1e-5, err_msg=name)
      np.testing.assert_allclose(from_examples[name], value, rtol=1e-5, atol=1e-5, err_msg=name)
    if module_cls is serving_modules.Tagging:
      assert outputs['encoder_outputs'].shape == (2, 5, 32)


@pytest.mark.slow
def test_create_export_module_of_the_modernbert_tiny_yaml(tmp_path):
  # Model Garden's export path from a config file: the shipped YAML, no next-sentence head.
  module = export_savedmodel.create_export_module(
      task_name='MaskedLM', config_file=os.path.join(ROOT, 'configs', 'pretraining',
                                                     'modernbert_tiny.yaml'),
      serving_params={})
  assert type(module.model.encoder_network).__name__ == 'ModernBertEncoder'
  export_dir = export_savedmodel_util.export(module, ['serve'], str(tmp_path / 'mlm'),
                                             timestamped=False)
  inputs = dict(_inputs(), masked_lm_positions=np.array([[1, 2], [0, 3]], np.int32))
  outputs = _call(tf.saved_model.load(export_dir).signatures['serving_default'], inputs)
  assert sorted(outputs) == ['mlm_logits'] and outputs['mlm_logits'].shape == (2, 2, 30522)
