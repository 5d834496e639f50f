"""The Hugging Face comparison's report: medians, ratios and the markdown table (`compare_hf`).

`build_report` turns the children's replies into per-variant results: the median steps/s and
tokens/s, the share of the framework's own matmul roofline in its dtype (model FLOP/s from
`model_flops`, one count for both frameworks: a variant that computes more, such as the
all-position logits, gets no credit for it) and ours / Hugging Face's tokens/s (the median of the
per-round ratios, so a drift of the machine's speed cancels), with issue 30's acceptance (ours >=
1.3x the like-for-like Hugging Face variant). `format_table` prints it.

Example:
  report = build_report(settings, machine, ours_info, hf_info, rounds)
  print(format_table(report))
"""

import statistics
from typing import Any, Dict, List, Optional, Sequence

from official.benchmark.hf_shared import HF, MASKED, OURS, TARGET_RATIO


def build_report(settings: Dict[str, Any], machine: Dict[str, Any], ours_info: Dict[str, Any],
                 hf_info: Dict[str, Any], rounds: Dict[str, List[Dict[str, Any]]]
                 ) -> Dict[str, Any]:
  """Medians, tokens/s, roofline shares and ratios from the children's replies.

  Args:
    settings: the run's flags (`batch_size`, `seq_length`, ...).
    machine: the CPU, cores, load and versions.
    ours_info: our child's first reply (`models`, `variants`).
    hf_info: the Hugging Face child's first reply (`variants`).
    rounds: OURS / HF -> their replies to each round (`rates`, `roofline`, ...).

  Returns:
    `settings`, `machine`, `models`, `roofline_tflops` (framework -> dtype -> best TFLOP/s),
    `results` (one per variant: `steps_per_second`, `tokens_per_second`, `model_tflops`,
    `share_of_roofline`, `ratio_ours_to_this` for Hugging Face's, or `error`) and `acceptance`
    (ours / the like-for-like Hugging Face variant per model, dtype and mode).

  Example:
    >>> build_report(settings, machine, ours_info, hf_info, rounds)['acceptance'][0]['met']
    True
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


def format_table(report: Dict[str, Any]) -> str:
  """The report as markdown: one row per variant, then the acceptance, CPU and roofline lines.

  Args:
    report: `build_report`'s report.

  Example:
    >>> print(format_table(report))  # | variant | MLM logits | steps/s | ...
  """
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
