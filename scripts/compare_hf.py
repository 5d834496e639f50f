"""Training speed of mlm-garden and of Hugging Face `transformers` (PyTorch) in one run (issue 30).

For each model (`--models`: bert_mini with its next-sentence head, modernbert_mini; any name of
`configs/pretraining/` or a YAML path) and dtype (`--precisions`: float32, bfloat16) one training
step is timed in each framework on the same shapes: forward, loss (masked LM, plus next sentence
when the config has that head), backward, gradient clipping at the config's norm and an AdamW
update, on a synthetic batch of `--batch_size` rows of `--seq_length` tokens with the config's
`max_predictions_per_seq` masked positions a row (20 for bert_mini, 38 for modernbert_mini;
scaled with the length when `--seq_length` differs from the config's).

- Ours: `official/nlp/tools/benchmark.py`'s `VariantRunner` (what `mlm-benchmark` times: the
  trainer's compiled train loop, synthetic batches of `pretrain_dataloader.dummy_dataset`);
  bfloat16 is the `mixed_bfloat16` policy.
- Hugging Face: the model built from the config that our interop writes for the same model
  (`hf_bert` / `bert_encoder_config.external_config`, `hf_modernbert.hf_config`), so the sizes are
  stated once; bfloat16 is `torch.autocast` around the forward pass (float32 weights, as ours).
  `--modes`: eager, and `torch.compile` of the loss function (a compile that fails is reported as
  'n/a (reason)' and the run goes on). AdamW is `torch.optim.AdamW(fused=True)`, transformers'
  Trainer default, with the config's betas, epsilon and weight decay (not on biases and norms).
  BERT: `BertForPreTraining` as shipped computes the vocabulary logits at all `seq_length`
  positions (`mlm_logits` 'all'); the 'masked' variant gathers the masked positions before
  `cls.predictions` as ours does (like for like). ModernBERT: `ModernBertForMaskedLM` with
  `sparse_prediction` (the masked positions only). Both sides see one document a row (ours
  reads modernbert_mini's `position_ids`, 0..seq-1 in the synthetic rows).

Each framework runs in its own child process (TensorFlow and PyTorch in one process contend for
threads), both pinned to `--cores` with `--threads` compute threads (default one per core).
After both have built and warmed up their variants they are timed in turn, ours then Hugging
Face's, `--rounds` times; each turn runs `--steps_per_round` steps of every variant, then
measures its own matmul roofline (chained `--matmul_size`^3 matmuls in float32 and bfloat16,
best over the rounds). Reported per variant: the median steps/s and tokens/s, the share of its
own framework's roofline in its dtype (model FLOP/s from `model_flops`, one count for both
frameworks: a variant that computes more, such as the all-position logits, gets no credit for
it), and ours / Hugging Face's tokens/s (the median of the per-round ratios, so a drift of the
machine's speed cancels). Issue 30's target: ours >= 1.3x the like-for-like Hugging Face variant
at each model, dtype and mode. Measure on a quiet machine: when other processes compete for the
cores, PyTorch's OpenMP threads wait for each other at every operation and the 2-thread figures
fall several-fold (ours less so); `--threads=1` shows how much of a gap that is.

Usage (torch and transformers come with the test extra):
  .venv/bin/python scripts/compare_hf.py --output_json=/tmp/compare_hf.json
  # smoke run at tiny sizes (under 2 minutes on 2 loaded cores; each compiled variant adds
  # about a minute of torch.compile):
  .venv/bin/python scripts/compare_hf.py --models=bert_tiny,modernbert_tiny --batch_size=4 \
      --seq_length=32 --rounds=2 --steps_per_round=2 --matmul_size=256 --modes=eager
  # short runs at the real sizes, one model and mode at a time on a 2-core machine:
  .venv/bin/python scripts/compare_hf.py --models=modernbert_mini --modes=eager --rounds=2 \
      --steps_per_round=3 --warmup_steps=1
  .venv/bin/python scripts/compare_hf.py --models=modernbert_mini --precisions=bfloat16 \
      --modes=compile --rounds=2 --steps_per_round=3 --warmup_steps=1 --threads=1
`--dtypes`, the old name of `--precisions`, still works (with a note on stderr). The report keeps
the key `dtypes` in its settings.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
  sys.path.insert(0, REPO)

from official.common import cli_utils  # pylint: disable=wrong-import-position
from official.utils.misc import cpu_info  # pylint: disable=wrong-import-position

CONFIG_DIR = os.path.join(REPO, 'configs', 'pretraining')
DTYPES = ('float32', 'bfloat16')
MODES = ('eager', 'compile')
# Old flag names -> the names shared by the tools (`cli_utils.renamed_flags`).
RENAMED_FLAGS = {'dtypes': 'precisions'}
OURS, HF = 'ours', 'hf'
# What the masked-LM head decodes: the masked positions only, or every position.
MASKED, ALL = 'masked', 'all'
TARGET_RATIO = 1.3  # issue 30: ours / Hugging Face tokens/s at each model, dtype and mode
SEED = 0


# ---- settings --------------------------------------------------------------------------------
def config_path(model: str) -> str:
  """The YAML of `--models` entry `model`: a path, or a name in `configs/pretraining/`.

  Raises:
    FileNotFoundError: neither exists, naming the flag and the configs there are.
  """
  if model.endswith(('.yaml', '.yml')):
    path = model
  else:
    path = os.path.join(CONFIG_DIR, f'{model}.yaml')
  if not os.path.isfile(path):
    names = sorted(name[:-5] for name in os.listdir(CONFIG_DIR) if name.endswith('.yaml'))
    raise FileNotFoundError(f'--models: no config {path} for {model!r}; expected a YAML path or '
                            f'one of {names}')
  return path


def model_label(model: str) -> str:
  """'bert_mini' for 'bert_mini' and for 'configs/pretraining/bert_mini.yaml'."""
  return os.path.splitext(os.path.basename(model))[0]


def masked_positions(config_positions: int, config_seq_length: int, seq_length: int) -> int:
  """The config's masked positions a row, scaled by `seq_length / config_seq_length`.

  Example:
    >>> masked_positions(38, 128, 32)  # modernbert_mini (30%) at 32 tokens
    10
  """
  if seq_length == config_seq_length:
    return config_positions
  return max(1, min(seq_length, round(config_positions * seq_length / config_seq_length)))


def parse_cores(text: str) -> List[int]:
  """'0,2-3' -> [0, 2, 3]; '' -> the cores this process may run on.

  Raises:
    ValueError: a malformed list or a core this process may not use, naming `--cores`.
  """
  allowed = sorted(os.sched_getaffinity(0))
  if not text.strip():
    return allowed
  cores = set()
  try:
    for part in text.split(','):
      first, _, last = part.strip().partition('-')
      cores.update(range(int(first), int(last or first) + 1))
  except ValueError:
    raise ValueError(f'--cores: expected a list such as 0,1 or 0-3, found {text!r}') from None
  unknown = sorted(cores - set(allowed))
  if unknown or not cores:
    raise ValueError(f'--cores: {text!r} names cores {unknown or "none"} this process may not '
                     f'use; expected some of {allowed}')
  return sorted(cores)


def _pin(cores: Sequence[int]) -> None:
  """Runs this process on `cores` (before TensorFlow or PyTorch starts its thread pools)."""
  os.sched_setaffinity(0, cores)


# ---- ours (TensorFlow child) ------------------------------------------------------------------
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
                                        _ours_override(model, spec), dtype, 'dummy')
        name = f"{OURS} {model['label']} {dtype}"
        model_dir = os.path.join(self._tmp.name, name.replace(' ', '_'))
        runner = benchmark.VariantRunner(name, params, model_dir)
        runner.run(spec['warmup_steps'])
        self._runners[name] = runner
        self.variants.append(dict(
            name=name, framework=OURS, model=model['label'], dtype=dtype, mode='tf.function',
            mlm_logits=MASKED, error=None, build_seconds=runner.build_seconds,
            first_step_seconds=runner.first_step_seconds))
        _log(f'{name}: built in {runner.build_seconds:.1f}s, first step '
             f'{runner.first_step_seconds:.1f}s')
        if model['label'] not in self.models:
          self.models[model['label']] = describe_model(runner.trainer.model, params)

  def info(self) -> Dict[str, Any]:
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


def _ours_override(model: Dict[str, Any], spec: Dict[str, Any]) -> str:
  """The `params_override` of one model: the batch, the length and the masked positions."""
  # Function-level: reads the YAML the TensorFlow child was given (yaml is light).
  import yaml
  with open(model['config_file'], encoding='utf-8') as f:
    data = (yaml.safe_load(f).get('task') or {}).get('train_data') or {}
  positions = masked_positions(data.get('max_predictions_per_seq', 20),
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


# ---- Hugging Face (PyTorch child) -------------------------------------------------------------
def hf_model(description: Dict[str, Any]) -> Any:
  """The `transformers` model of `describe_model`'s description (float32, training mode).

  `BertForPreTraining` (or `BertForMaskedLM` without a next-sentence head) and
  `ModernBertForMaskedLM` with `sparse_prediction`, built from `hf_config`.
  """
  # Function-level: PyTorch loads in its child only (test extra; our runtime never imports it).
  import transformers
  values = {k: v for k, v in description['hf_config'].items()
            if k not in ('model_type', 'architectures')}
  if description['family'] == 'modernbert':
    model = transformers.ModernBertForMaskedLM(
        transformers.ModernBertConfig(sparse_prediction=True, **values))
  else:
    config = transformers.BertConfig(**values)
    model = (transformers.BertForPreTraining(config) if description['next_sentence']
             else transformers.BertForMaskedLM(config))
  return model.train()


def synthetic_batch(description: Dict[str, Any], seed: int = SEED) -> Dict[str, Any]:
  """Random token ids, `masked_positions` distinct sorted positions a row and their labels.

  Returns:
    torch tensors: `input_ids`, `attention_mask` (ones), `token_type_ids` (zeros) [batch, seq];
    `positions`, `masked_ids` [batch, predictions]; `labels` [batch, seq] (-100 except at the
    positions); `next_sentence` [batch] in {0, 1}.
  """
  # Function-level: as `hf_model`.
  import torch
  batch, seq = description['batch_size'], description['seq_length']
  vocab = description['hf_config']['vocab_size']
  generator = torch.Generator().manual_seed(seed)
  ids = torch.randint(0, vocab, (batch, seq), generator=generator)
  scores = torch.rand(batch, seq, generator=generator)
  positions = scores.topk(description['masked_positions'], dim=1).indices.sort(dim=1).values
  masked_ids = ids.gather(1, positions)
  labels = torch.full_like(ids, -100).scatter(1, positions, masked_ids)
  return dict(input_ids=ids, attention_mask=torch.ones_like(ids),
              token_type_ids=torch.zeros_like(ids), positions=positions, masked_ids=masked_ids,
              labels=labels, next_sentence=torch.randint(0, 2, (batch,), generator=generator))


def hf_loss_fn(model: Any, description: Dict[str, Any], mlm_logits: str) -> Callable:
  """loss(batch) of one training step: masked LM (+ next sentence), as a scalar tensor.

  Args:
    model: `hf_model`'s model.
    description: `describe_model`'s description.
    mlm_logits: ALL (BERT: `BertForPreTraining`'s own loss, logits at every position) or MASKED
      (BERT: the masked positions gathered before `cls.predictions`; ModernBERT: always, by
      `sparse_prediction`).
  """
  # Function-level: as `hf_model`.
  import torch
  cross_entropy = torch.nn.functional.cross_entropy
  vocab = description['hf_config']['vocab_size']
  next_sentence = description['next_sentence']

  if description['family'] == 'modernbert':
    def loss(batch):
      return model(input_ids=batch['input_ids'], attention_mask=batch['attention_mask'],
                   labels=batch['labels']).loss
    return loss
  if mlm_logits == ALL:
    def loss(batch):
      extra = {'next_sentence_label': batch['next_sentence']} if next_sentence else {}
      return model(input_ids=batch['input_ids'], attention_mask=batch['attention_mask'],
                   token_type_ids=batch['token_type_ids'], labels=batch['labels'], **extra).loss
    return loss

  def loss(batch):
    out = model.bert(input_ids=batch['input_ids'], attention_mask=batch['attention_mask'],
                     token_type_ids=batch['token_type_ids'])
    hidden = out.last_hidden_state
    index = batch['positions'].unsqueeze(-1).expand(-1, -1, hidden.shape[-1])
    logits = model.cls.predictions(torch.gather(hidden, 1, index))
    total = cross_entropy(logits.reshape(-1, vocab).float(), batch['masked_ids'].reshape(-1))
    if next_sentence:
      total = total + cross_entropy(model.cls.seq_relationship(out.pooler_output).float(),
                                    batch['next_sentence'])
    return total
  return loss


def _adamw(model: Any, optimizer: Dict[str, Any]) -> Any:
  """torch's fused AdamW (transformers' Trainer default); no decay on biases and norms."""
  # Function-level: as `hf_model`.
  import torch
  decay, no_decay = [], []
  for name, parameter in model.named_parameters():
    (no_decay if 'bias' in name or 'norm' in name.lower() else decay).append(parameter)
  groups = [{'params': decay, 'weight_decay': optimizer['weight_decay']},
            {'params': no_decay, 'weight_decay': 0.0}]
  return torch.optim.AdamW(groups, lr=optimizer['learning_rate'], betas=optimizer['betas'],
                           eps=optimizer['epsilon'], fused=True)


class HfVariant:
  """One Hugging Face variant: model, optimizer and (compiled) loss, warmed up.

  Args:
    description: `describe_model`'s description.
    dtype: 'float32' or 'bfloat16' (autocast).
    mode: 'eager' or 'compile'.
    mlm_logits: MASKED or ALL (see `hf_loss_fn`).
    warmup_steps: untimed steps after the first.
    compile_fn: `torch.compile` (tests pass one that fails).
  """

  def __init__(self, name: str, description: Dict[str, Any], dtype: str, mode: str,
               mlm_logits: str, warmup_steps: int, compile_fn: Optional[Callable] = None):
    # Function-level: as `hf_model`.
    import torch
    self._torch = torch
    self.name, self.dtype = name, dtype
    self.error: Optional[str] = None
    self.build_seconds = self.first_step_seconds = None
    self.rates: List[float] = []
    self.cpu_per_step: List[float] = []
    start = time.perf_counter()
    torch.manual_seed(SEED)
    self.model = hf_model(description)
    self.parameters = self.model.parameters
    self.optimizer = _adamw(self.model, description['optimizer'])
    self.clip_norm = description['optimizer']['clip_norm']
    self.batch = synthetic_batch(description)
    self.loss_fn = hf_loss_fn(self.model, description, mlm_logits)
    self.graph_breaks: Optional[int] = None
    breaks_before = _graph_breaks()
    try:
      if mode == 'compile':
        self.loss_fn = (compile_fn or torch.compile)(self.loss_fn)
      self.build_seconds = time.perf_counter() - start
      start = time.perf_counter()
      self.step()  # the compile happens here
      self.first_step_seconds = time.perf_counter() - start
      for _ in range(warmup_steps):
        self.step()
    except Exception as e:  # pylint: disable=broad-except  (any compile failure is a result)
      self.error = _reason(e)
      _log(f'{name}: n/a ({self.error})')
    if mode == 'compile':
      self.graph_breaks = _graph_breaks() - breaks_before

  def step(self) -> float:
    """One training step; returns the loss (reading it waits for the step)."""
    torch = self._torch
    with torch.autocast('cpu', dtype=torch.bfloat16, enabled=self.dtype == 'bfloat16'):
      loss = self.loss_fn(self.batch)
    loss.backward()
    if self.clip_norm:
      torch.nn.utils.clip_grad_norm_(self.parameters(), self.clip_norm)
    self.optimizer.step()
    self.optimizer.zero_grad(set_to_none=True)
    return float(loss.detach())

  def time_window(self, steps: int) -> Optional[float]:
    """steps/s of `steps` steps (None once the variant has failed)."""
    if self.error:
      return None
    try:
      start, cpu_start = time.perf_counter(), time.process_time()
      for _ in range(steps):
        self.step()
      seconds = time.perf_counter() - start
    except Exception as e:  # pylint: disable=broad-except  (e.g. a recompile that fails)
      self.error = _reason(e)
      _log(f'{self.name}: n/a ({self.error})')
      return None
    self.cpu_per_step.append((time.process_time() - cpu_start) / steps)
    self.rates.append(steps / seconds)
    return self.rates[-1]


def _graph_breaks() -> int:
  """The graph breaks torch.compile has met in this process so far."""
  # Function-level: as `hf_model`.
  from torch._dynamo import utils as dynamo_utils  # pylint: disable=protected-access
  return sum(dynamo_utils.counters['graph_break'].values())


def _reason(error: BaseException) -> str:
  """`Type: first line` of an exception, at most 160 characters."""
  lines = str(error).strip().splitlines()
  text = f'{type(error).__name__}: {lines[0] if lines else ""}'.rstrip(': ')
  return text if len(text) <= 160 else text[:157] + '...'


def torch_matmul_peak(dtype: str, size: int, seconds: float) -> float:
  """The best FLOP/s of chained square `size` matmuls in `dtype` (torch, CPU)."""
  # Function-level: as `hf_model`.
  import torch
  a = (torch.randn(size, size) * size ** -0.5).to(getattr(torch, dtype))
  chain, best = 4, 0.0
  with torch.no_grad():
    x = a @ a
    start = time.perf_counter()
    while True:
      t0 = time.perf_counter()
      x = a
      for _ in range(chain):
        x = x @ a
      float(x[0, 0])
      now = time.perf_counter()
      best = max(best, chain * 2.0 * size ** 3 / (now - t0))
      if now - start > seconds:
        return best


class HfBench:
  """The Hugging Face variants: model x dtype x mode x (BERT) MASKED / ALL logits.

  Args:
    spec: `models` ({label: `describe_model` description}), `dtypes`, `modes`, `warmup_steps`,
      `matmul_size`, `threads`.
    compile_fn: replaces `torch.compile` (tests).
  """

  def __init__(self, spec: Dict[str, Any], compile_fn: Optional[Callable] = None):
    # Function-level: as `hf_model`.
    import torch
    import transformers
    self._torch, self._transformers = torch, transformers
    if spec.get('threads'):
      torch.set_num_threads(spec['threads'])
    # Every variant compiles the same transformers code: room for all their graphs, and an error
    # (reported as n/a) rather than a silent fallback to eager when the room runs out.
    torch._dynamo.config.recompile_limit = 64  # pylint: disable=protected-access
    torch._dynamo.config.fail_on_recompile_limit_hit = True  # pylint: disable=protected-access
    self.matmul_size = spec['matmul_size']
    self.variants: List[Dict[str, Any]] = []
    self._runners: Dict[str, HfVariant] = {}
    for label, description in spec['models'].items():
      heads = [MASKED, ALL] if description['family'] == 'bert' else [MASKED]
      for dtype in spec['dtypes']:
        for mode in spec['modes']:
          for head in heads:
            name = f'{HF} {label} {dtype} {mode}' + (f' {head}' if len(heads) > 1 else '')
            runner = HfVariant(name, description, dtype, mode, head, spec['warmup_steps'],
                               compile_fn)
            self._runners[name] = runner
            self.variants.append(dict(
                name=name, framework=HF, model=label, dtype=dtype, mode=mode, mlm_logits=head,
                error=runner.error, build_seconds=runner.build_seconds,
                first_step_seconds=runner.first_step_seconds,
                graph_breaks=runner.graph_breaks,
                parameters=sum(p.numel() for p in runner.model.parameters())))
            if not runner.error:
              _log(f'{name}: first step {runner.first_step_seconds:.1f}s')

  def close(self) -> None:
    """Nothing to release (the process ends next)."""

  def info(self) -> Dict[str, Any]:
    return dict(variants=self.variants, versions={
        'torch': self._torch.__version__, 'transformers': self._transformers.__version__})

  def run_round(self, steps: int, peak_seconds: float) -> Dict[str, Any]:
    """Times `steps` steps of every variant, then the matmul roofline of each dtype."""
    rates, cpu, errors = {}, {}, {}
    for name, runner in self._runners.items():
      rates[name] = runner.time_window(steps)
      cpu[name] = runner.cpu_per_step[-1] if rates[name] else None
      errors[name] = runner.error
    dtypes = sorted({v['dtype'] for v in self.variants})
    roofline = {dtype: torch_matmul_peak(dtype, self.matmul_size, peak_seconds)
                for dtype in dtypes} if peak_seconds > 0 else {}
    return dict(rates=rates, cpu_seconds_per_step=cpu, roofline=roofline, errors=errors)


# ---- child processes --------------------------------------------------------------------------
def serve(kind: str) -> int:
  """A child's loop: reads the spec (one JSON line), builds, then answers `round` requests.

  The replies go to the original stdout, one JSON line each; anything else the libraries print
  goes to stderr.
  """
  replies = os.fdopen(os.dup(1), 'w', buffering=1)
  os.dup2(2, 1)
  sys.stdout = sys.stderr
  spec = json.loads(sys.stdin.readline())
  if spec.get('cores'):
    _pin(spec['cores'])
  try:
    bench = OursBench(spec) if kind == OURS else HfBench(spec)
  except Exception as e:  # pylint: disable=broad-except  (reported to the parent, which stops)
    replies.write(json.dumps({'error': _reason(e)}) + '\n')
    raise
  replies.write(json.dumps(bench.info()) + '\n')
  for line in sys.stdin:
    request = json.loads(line)
    if request.get('command') != 'round':
      break
    cpu_start = time.process_time()
    reply = bench.run_round(request['steps'], request['peak_seconds'])
    # The process' CPU clock at both ends: what it used between rounds, while the other child
    # was timed, shows whether an idle child took cycles from the other.
    reply['process_cpu_seconds'] = [cpu_start, time.process_time()]
    replies.write(json.dumps(reply) + '\n')
  bench.close()
  return 0


class _Child:
  """A framework's child process (`--worker=KIND`): JSON lines in, JSON lines out."""

  def __init__(self, kind: str, spec: Dict[str, Any]):
    self.kind = kind
    self.process = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), f'--worker={kind}'], cwd=REPO,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2'))
    self._send(spec)

  def _send(self, message: Dict[str, Any]) -> None:
    self.process.stdin.write(json.dumps(message) + '\n')
    self.process.stdin.flush()

  def receive(self) -> Dict[str, Any]:
    """The child's next reply.

    Raises:
      RuntimeError: the child exited or reported an error, naming it and its exit status.
    """
    line = self.process.stdout.readline()
    reply = json.loads(line) if line.strip() else None
    if reply is None or 'error' in reply:
      status = self.process.wait()
      reason = reply['error'] if reply else 'no reply (its log is on stderr above)'
      raise RuntimeError(f'the {self.kind} child failed (exit status {status}): {reason}')
    return reply

  def request(self, message: Dict[str, Any]) -> Dict[str, Any]:
    self._send(message)
    return self.receive()

  def close(self) -> None:
    if self.process.poll() is None:
      try:
        self._send({'command': 'quit'})
        self.process.stdin.close()
        self.process.wait(timeout=60)
      except (OSError, subprocess.TimeoutExpired):
        self.process.kill()
        self.process.wait()


# ---- the comparison ---------------------------------------------------------------------------
def run_comparison(args: argparse.Namespace) -> Dict[str, Any]:
  """Starts both children, times them in turn for `args.rounds` rounds; returns the report."""
  cores = parse_cores(args.cores)
  threads = args.threads or len(cores)
  common = dict(dtypes=args.precisions, warmup_steps=args.warmup_steps,
                matmul_size=args.matmul_size, threads=threads, cores=cores)
  load_before = _load_average()
  models = [dict(label=model_label(m), config_file=config_path(m)) for m in args.models]
  children: List[_Child] = []
  try:
    _log(f'building ours ({len(models) * len(args.precisions)} variants) on cores {cores}')
    ours = _Child(OURS, dict(common, models=models, batch_size=args.batch_size,
                             seq_length=args.seq_length))
    children.append(ours)
    ours_info = ours.receive()
    _log('building Hugging Face\'s variants (a torch.compile can take minutes)')
    hf = _Child(HF, dict(common, models=ours_info['models'], modes=args.modes))
    children.append(hf)
    hf_info = hf.receive()
    rounds: Dict[str, List[Dict[str, Any]]] = {OURS: [], HF: []}
    for index in range(args.rounds):
      for child in children:
        reply = child.request({'command': 'round', 'steps': args.steps_per_round,
                               'peak_seconds': args.peak_seconds})
        rounds[child.kind].append(reply)
        shown = ', '.join(f'{name} {rate:.3f}' for name, rate in reply['rates'].items()
                          if rate)
        _log(f'round {index + 1}/{args.rounds} {child.kind}: steps/s {shown}')
  finally:
    for child in children:
      child.close()
  settings = dict(models=[m['label'] for m in models], dtypes=args.precisions, modes=args.modes,
                  batch_size=args.batch_size, seq_length=args.seq_length, rounds=args.rounds,
                  steps_per_round=args.steps_per_round, warmup_steps=args.warmup_steps,
                  matmul_size=args.matmul_size, cores=cores, threads=threads)
  cpu = cpu_info.read_cpu_info()
  machine = dict(cpu_model=cpu.model, cpu_flags=cpu.flags, cpu_line=cpu.line(),
                 cpu_count=os.cpu_count(), load_average_before=load_before,
                 load_average_after=_load_average(),
                 versions=dict(ours_info['versions'], **hf_info['versions'],
                               python=sys.version.split()[0]))
  return build_report(settings, machine, ours_info, hf_info, rounds)


def build_report(settings: Dict[str, Any], machine: Dict[str, Any], ours_info: Dict[str, Any],
                 hf_info: Dict[str, Any], rounds: Dict[str, List[Dict[str, Any]]]
                 ) -> Dict[str, Any]:
  """Medians, tokens/s, roofline shares and ratios from the children's replies.

  Args:
    settings: the run's flags (`batch_size`, `seq_length`, ...).
    machine: the CPU, cores, load and versions.
    ours_info, hf_info: the children's first replies (`models`, `variants`).
    rounds: OURS / HF -> their replies to each round (`rates`, `roofline`, ...).

  Returns:
    `settings`, `machine`, `models`, `roofline_tflops` (framework -> dtype -> best TFLOP/s),
    `results` (one per variant: `steps_per_second`, `tokens_per_second`, `model_tflops`,
    `share_of_roofline`, `ratio_ours_to_this` for Hugging Face's, or `error`) and `acceptance`
    (ours / the like-for-like Hugging Face variant per model, dtype and mode).
  """
  tokens_per_step = settings['batch_size'] * settings['seq_length']
  roofline = {framework: {} for framework in (OURS, HF)}
  for framework, replies in rounds.items():
    for reply in replies:
      for dtype, flops in reply['roofline'].items():
        roofline[framework][dtype] = max(roofline[framework].get(dtype, 0.0), flops)
  ours_rates = {v['name']: [r['rates'][v['name']] for r in rounds[OURS]]
                for v in ours_info['variants']}
  results = []
  for variant in ours_info['variants'] + hf_info['variants']:
    framework = variant['framework']
    rates = [reply['rates'].get(variant['name']) for reply in rounds[framework]]
    errors = [reply.get('errors', {}).get(variant['name']) for reply in rounds[framework]]
    error = variant.get('error') or next((e for e in errors if e), None)
    result = dict(variant, error=error, steps_per_second_rounds=rates,
                  cpu_seconds_per_step=_median([r['cpu_seconds_per_step'].get(variant['name'])
                                                for r in rounds[framework]]))
    flops_per_step = ours_info['models'][variant['model']]['flops_per_sequence'] * (
        settings['batch_size'])
    steps = None if error else _median(rates)
    if steps:
      peak = roofline[framework].get(variant['dtype'])
      result.update(steps_per_second=steps, tokens_per_second=steps * tokens_per_step,
                    model_tflops=steps * flops_per_step / 1e12,
                    roofline_tflops=peak / 1e12 if peak else None,
                    share_of_roofline=steps * flops_per_step / peak if peak else None)
      if framework == HF:
        ours = ours_rates[f"{OURS} {variant['model']} {variant['dtype']}"]
        result['ratio_ours_to_this'] = _median([a / b for a, b in zip(ours, rates) if a and b])
    results.append(result)
  idle_cpu = {framework: _idle_cpu_seconds(replies) for framework, replies in rounds.items()}
  return dict(settings=settings, machine=machine, models=ours_info['models'],
              roofline_tflops={f: {d: v / 1e12 for d, v in p.items()} for f, p in roofline.items()},
              idle_cpu_seconds=idle_cpu, results=results, acceptance=_acceptance(results))


def _idle_cpu_seconds(replies: Sequence[Dict[str, Any]]) -> Optional[float]:
  """CPU seconds a child used between its rounds (while the other was timed); None without."""
  clocks = [reply.get('process_cpu_seconds') for reply in replies]
  if len(clocks) < 2 or None in clocks:
    return None
  return sum(later[0] - earlier[1] for earlier, later in zip(clocks, clocks[1:]))


def _acceptance(results: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
  """Ours / the like-for-like (MASKED) Hugging Face variant, per model, dtype and mode."""
  rows = []
  for r in results:
    if r['framework'] == HF and r['mlm_logits'] == MASKED:
      ratio = r.get('ratio_ours_to_this')
      rows.append(dict(model=r['model'], dtype=r['dtype'], mode=r['mode'], ratio=ratio,
                       target=TARGET_RATIO, met=None if ratio is None else ratio >= TARGET_RATIO,
                       error=r['error']))
  return rows


def _median(values: Sequence[Optional[float]]) -> Optional[float]:
  values = [v for v in values if v is not None]
  return statistics.median(values) if values else None


def _load_average() -> Optional[List[float]]:
  return list(os.getloadavg()) if hasattr(os, 'getloadavg') else None


# ---- output -----------------------------------------------------------------------------------
def format_table(report: Dict[str, Any]) -> str:
  """The report as markdown: one row per variant, then the acceptance, CPU and roofline lines."""
  settings = report['settings']
  lines = ['| variant | MLM logits | steps/s | tokens/s | share of own roofline | ours / this |',
           '|---|---|---|---|---|---|']
  for r in report['results']:
    logits = ('masked positions' if r['mlm_logits'] == MASKED
              else f"all {settings['seq_length']} positions")
    name = r['name'] + (f" ({r['graph_breaks']} graph breaks)" if r.get('graph_breaks') else '')
    if r.get('error') or not r.get('steps_per_second'):
      reason = r.get('error') or 'no timing'
      lines.append(f'| {name} | {logits} | n/a ({reason}) | - | - | - |')
      continue
    share = r.get('share_of_roofline')
    share_text = '-' if share is None else f"{100 * share:.1f}% of {r['dtype']}"
    ratio = r.get('ratio_ours_to_this')
    lines.append(f"| {name} | {logits} | {r['steps_per_second']:.3f} | "
                 f"{r['tokens_per_second']:,.0f} | {share_text} | "
                 f"{'-' if ratio is None else f'{ratio:.2f}x'} |")
  lines.append('')
  for row in report['acceptance']:
    if row['ratio'] is None:
      verdict = f"n/a ({row['error'] or 'no timing'})"
    else:
      verdict = f"{row['ratio']:.2f}x ({'meets' if row['met'] else 'misses'} {row['target']}x)"
    lines.append(f"- ours / Hugging Face (masked positions), {row['model']} {row['dtype']} "
                 f"{row['mode']}: {verdict}")
  machine = report['machine']
  rooflines = '; '.join(
      f"{name} " + ', '.join(f'{dtype} {value:.3f}' for dtype, value in sorted(peaks.items()))
      for name, peaks in (('TensorFlow', report['roofline_tflops'][OURS]),
                          ('PyTorch', report['roofline_tflops'][HF])) if peaks)
  versions = ', '.join(f'{k} {v}' for k, v in sorted(machine['versions'].items()))
  load = machine.get('load_average_before')
  lines += [
      '',
      f"CPU: {machine['cpu_line']}; cores {settings['cores']} of {machine['cpu_count']}, "
      f"{settings['threads']} threads a framework"
      + (f'; load average before {load[0]:.2f}' if load else ''),
      f'matmul roofline TFLOP/s ({settings["matmul_size"]}^3, best of the rounds): '
      f"{rooflines or '-'}",
      f"batch {settings['batch_size']}, seq {settings['seq_length']}, "
      + ', '.join(f"{label}: {m['masked_positions']} masked positions, "
                  f"{m['flops_per_sequence'] / 1e9:.2f} GFLOP per training sequence"
                  for label, m in report['models'].items()),
      f"{settings['rounds']} rounds of {settings['steps_per_round']} steps a variant (medians); "
      f'{versions}']
  idle = report.get('idle_cpu_seconds') or {}
  if all(idle.get(f) is not None for f in (OURS, HF)):
    lines.append(f"CPU used by each child while the other was timed: ours {idle[OURS]:.2f}s, "
                 f"Hugging Face {idle[HF]:.2f}s")
  return '\n'.join(lines)


def _log(message: str) -> None:
  print(f'[compare_hf {time.strftime("%H:%M:%S")}] {message}', file=sys.stderr, flush=True)


def _list_flag(parser: argparse.ArgumentParser, name: str, text: str,
               choices: Optional[Sequence[str]] = None) -> List[str]:
  values = [v.strip() for v in text.split(',') if v.strip()]
  if not values:
    parser.error(f'--{name}: empty; expected a comma-separated list')
  unknown = [v for v in values if choices and v not in choices]
  if unknown:
    parser.error(f'--{name}: unknown {unknown}; expected some of {list(choices)}')
  if len(set(values)) != len(values):
    parser.error(f'--{name}: repeated entries in {values}')
  return values


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
  """The flags (lists split and checked; errors name the flag; the old names of
  `RENAMED_FLAGS` are taken with a note)."""
  argv = cli_utils.renamed_flags(sys.argv[1:] if argv is None else argv, RENAMED_FLAGS,
                                 'compare_hf')
  parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
  parser.add_argument('--models', default='bert_mini,modernbert_mini',
                      help='names in configs/pretraining/ or YAML paths')
  parser.add_argument('--precisions', default=','.join(DTYPES),
                      help='comma-separated of float32, bfloat16')
  parser.add_argument('--modes', default=','.join(MODES),
                      help="Hugging Face's: eager and/or compile (torch.compile)")
  parser.add_argument('--batch_size', type=int, default=32)
  parser.add_argument('--seq_length', type=int, default=128)
  parser.add_argument('--rounds', type=int, default=5, help='timed turns of each framework')
  parser.add_argument('--steps_per_round', type=int, default=5)
  parser.add_argument('--warmup_steps', type=int, default=2, help='untimed steps after the first')
  parser.add_argument('--cores', default='',
                      help='cores both children run on, e.g. 0,1 or 0-3 (default: all allowed)')
  parser.add_argument('--threads', type=int, default=0,
                      help='compute threads of each framework (default: one per core of --cores)')
  parser.add_argument('--peak_seconds', type=float, default=0.5,
                      help='matmul roofline measurement per dtype per round (0: skip)')
  parser.add_argument('--matmul_size', type=int, default=2048,
                      help='roofline matmul size (1024 or more: smaller ones measure overhead)')
  parser.add_argument('--output_json', default='', help='also write the report here')
  parser.add_argument('--worker', choices=(OURS, HF), help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.worker:
    return args
  args.models = _list_flag(parser, 'models', args.models)
  args.precisions = _list_flag(parser, 'precisions', args.precisions, DTYPES)
  args.modes = _list_flag(parser, 'modes', args.modes, MODES)
  for name in ('batch_size', 'seq_length', 'rounds', 'steps_per_round', 'matmul_size'):
    if getattr(args, name) < 1:
      parser.error(f'--{name} must be >= 1, found {getattr(args, name)}')
  for name in ('warmup_steps', 'threads'):
    if getattr(args, name) < 0:
      parser.error(f'--{name} must be >= 0, found {getattr(args, name)}')
  try:
    parse_cores(args.cores)
    for model in args.models:
      config_path(model)
  except (ValueError, FileNotFoundError) as e:
    parser.error(str(e))
  return args


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Runs the comparison; prints the markdown table (and writes the JSON with --output_json)."""
  args = parse_args(argv)
  if args.worker:
    status = serve(args.worker)
    sys.stderr.flush()
    # The measurement is over: skip the interpreter's teardown (TensorFlow's, with the input
    # pipeline's threads still running, took up to a minute on a loaded machine).
    os._exit(status)  # pylint: disable=protected-access
  try:
    report = run_comparison(args)
  except RuntimeError as e:
    print(f'compare_hf: {e}', file=sys.stderr)
    return 1
  print(format_table(report))
  if args.output_json:
    with open(args.output_json, 'w', encoding='utf-8') as f:
      json.dump(report, f, indent=2)
  return 0


if __name__ == '__main__':
  sys.exit(main())
