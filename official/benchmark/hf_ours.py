"""Our side of the Hugging Face comparison, run in the TensorFlow child (`compare_hf`).

`OursBench` builds our variants (model x dtype) with `official/nlp/tools/benchmark.py`'s
`VariantRunner` (what `mlm-benchmark` times: the trainer's compiled train loop, synthetic batches
of `pretrain_dataloader.dummy_dataset`; bfloat16 is the `mixed_bfloat16` policy) and times them a
round at a time. `describe_model` tells the Hugging Face child how to build the same model and step.
TensorFlow is imported inside the functions: the parent and the PyTorch child never load it.

Example:
  bench = OursBench(dict(models=[dict(label='bert_tiny', config_file=config_path('bert_tiny'))],
                         dtypes=['float32'], batch_size=4, seq_length=32, warmup_steps=0,
                         matmul_size=256, threads=0))
  bench.run_round(2, 0.5)  # {'rates': {'ours bert_tiny float32': ...}, ...}
"""

import os
from typing import Any, Dict, List

from official.benchmark import hf_shared
from official.benchmark.hf_shared import MASKED, OURS


class OursBench:
  """Our variants (model x dtype), each `benchmark.VariantRunner`, built and warmed up.

  Args:
    spec: `models` ([{label, config_file, params_override}]), `dtypes`, `batch_size`,
      `seq_length`, `warmup_steps`, `matmul_size`, `threads`.
  """

  def __init__(self, spec: Dict[str, Any]):
    # Function-level: TensorFlow loads in this child only, never beside PyTorch or in the parent.
    import tempfile
    import tensorflow as tf
    from official.nlp.tools import benchmark
    self._benchmark, self._tf = benchmark, tf
    if spec.get('threads'):
      tf.config.threading.set_intra_op_parallelism_threads(spec['threads'])
    self.matmul_size = spec['matmul_size']
    self.models: Dict[str, Dict[str, Any]] = {}
    self.variants: List[Dict[str, Any]] = []
    self._runners: Dict[str, Any] = {}
    self._tmp = tempfile.TemporaryDirectory(prefix='compare_hf_')
    for model in spec['models']:
      for dtype in spec['dtypes']:
        params = benchmark.build_params('bert/pretraining', [model['config_file']],
                                        ours_override(model, spec), dtype, 'dummy')
        name = f"{OURS} {model['label']} {dtype}"
        model_dir = os.path.join(self._tmp.name, name.replace(' ', '_'))
        runner = benchmark.VariantRunner(name, params, model_dir)
        runner.run(spec['warmup_steps'])
        self._runners[name] = runner
        self.variants.append(dict(
            name=name, framework=OURS, model=model['label'], dtype=dtype, mode='tf.function',
            mlm_logits=MASKED, error=None, build_seconds=runner.build_seconds,
            first_step_seconds=runner.first_step_seconds))
        hf_shared.log(f'{name}: built in {runner.build_seconds:.1f}s, first step '
                      f'{runner.first_step_seconds:.1f}s')
        if model['label'] not in self.models:
          self.models[model['label']] = describe_model(runner.trainer.model, params)

  def info(self) -> Dict[str, Any]:
    """The first reply to the parent: `models` (`describe_model`'s), `variants`, `versions`."""
    return dict(models=self.models, variants=self.variants,
                versions={'tensorflow': self._tf.__version__})

  def close(self) -> None:
    """Removes the variants' model directories (nothing was saved there)."""
    self._tmp.cleanup()

  def run_round(self, steps: int, peak_seconds: float) -> Dict[str, Any]:
    """Times `steps` steps of every variant, then the matmul roofline of each dtype."""
    rates, cpu = {}, {}
    for name, runner in self._runners.items():
      rates[name] = runner.time_window(steps)
      cpu[name] = runner.cpu_per_step[-1]
    dtypes = sorted({v['dtype'] for v in self.variants})
    roofline = {dtype: self._benchmark.measure_matmul_peak(dtype, self.matmul_size, peak_seconds)
                for dtype in dtypes} if peak_seconds > 0 else {}
    return dict(rates=rates, cpu_seconds_per_step=cpu, roofline=roofline)


def ours_override(model: Dict[str, Any], spec: Dict[str, Any]) -> str:
  """The `params_override` of one model: the batch, the length and the masked positions.

  Args:
    model: `config_file` and optionally `params_override` (appended last).
    spec: `batch_size` and `seq_length` of the run.

  Example:
    >>> ours_override(dict(config_file=config_path('bert_mini')),
    ...               dict(batch_size=4, seq_length=64)).split(',')[-1]
    'task.train_data.max_predictions_per_seq=10'
  """
  # Function-level: reads the YAML the TensorFlow child was given (yaml is light).
  import yaml
  with open(model['config_file'], encoding='utf-8') as f:
    data = (yaml.safe_load(f).get('task') or {}).get('train_data') or {}
  positions = hf_shared.masked_positions(data.get('max_predictions_per_seq', 20),
                                         data.get('seq_length', 128), spec['seq_length'])
  overrides = [f"task.train_data.global_batch_size={spec['batch_size']}",
               f"task.train_data.seq_length={spec['seq_length']}",
               f'task.train_data.max_predictions_per_seq={positions}']
  if model.get('params_override'):
    overrides.append(model['params_override'])
  return ','.join(overrides)


def describe_model(model: Any, params: Any) -> Dict[str, Any]:
  """What the Hugging Face child needs to build the same model and step, from our built model.

  Args:
    model: the task's built `BertPretrainerV2`.
    params: its experiment config.

  Returns:
    `family` ('bert' or 'modernbert'), `hf_config` (the `config.json` dict our interop writes
    for it), `next_sentence`, `masked_positions`, `batch_size`, `seq_length`, `parameters` (our
    trainable parameter count), `flops_per_sequence` (`model_flops`, training) and `optimizer`
    (AdamW's learning rate, betas, epsilon, weight decay and clipping norm).

  Raises:
    ValueError: an encoder type without a Hugging Face counterpart here, or an optimizer other
      than AdamW, naming the config field.

  Example:
    >>> describe_model(task.build_model(), params)['family']
    'modernbert'
  """
  # Function-level: the interop modules import TensorFlow (this runs in the TensorFlow child).
  from official.nlp.modeling.networks import encoder_family
  from official.nlp.tools import model_flops
  encoder_type = params.task.model.encoder.type
  # The encoder family's Hugging Face `config.json` (`hf_bert_config`, `hf_modernbert`); the
  # child builds the transformers model of its `model_type`.
  hf = getattr(encoder_family.family_of_model(model), 'hf', None)
  hf_config = (encoder_family.resolve(hf.config)(model)
               if hf is not None and hf.config is not None
               and not getattr(params.task.model.encoder.get(), 'norm_first', False) else {})
  family = hf_config.get('model_type')
  if family not in ('bert', 'modernbert'):
    raise ValueError(f'task.model.encoder.type={encoder_type!r}: no Hugging Face counterpart '
                     "here; expected 'bert' (post-LN) or 'modernbert'")
  heads = [head.name for head in params.task.model.cls_heads]
  next_sentence = 'next_sentence' in heads
  if set(heads) - {'next_sentence'}:
    raise ValueError(f'task.model.cls_heads: {heads}; expected none or next_sentence (the heads '
                     'of BertForPreTraining)')
  if family == 'modernbert' and next_sentence:
    raise ValueError('task.model.cls_heads: ModernBertForMaskedLM has no next_sentence head; '
                     'expected none')
  optimizer = params.trainer.optimizer_config.optimizer
  if optimizer.type != 'adamw':
    raise ValueError(f'trainer.optimizer_config.optimizer.type={optimizer.type!r}; expected '
                     "'adamw' (the Hugging Face side runs torch's AdamW)")
  adamw = optimizer.adamw
  learning_rate = params.trainer.optimizer_config.learning_rate.get()
  data = params.task.train_data
  return dict(
      family=family, hf_config=hf_config, next_sentence=next_sentence,
      masked_positions=data.max_predictions_per_seq, batch_size=data.global_batch_size,
      seq_length=data.seq_length, parameters=int(model.count_params()),
      flops_per_sequence=model_flops.model_flops_per_sequence(params)['train'],
      optimizer=dict(learning_rate=float(getattr(learning_rate, 'initial_learning_rate', 1e-4)),
                     betas=[adamw.beta_1, adamw.beta_2], epsilon=adamw.epsilon,
                     weight_decay=adamw.weight_decay_rate,
                     clip_norm=adamw.gradient_clip_norm or 0.0))
