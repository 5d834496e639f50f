"""Builds the `tf.distribute` strategy named by `runtime.distribution_strategy`.

`strategy_from_runtime(params.runtime)` is the one way a run (the CLI, the Python API, continuous
fine-tuning, the benchmark) builds its strategy; `get_distribution_strategy` and `configure_cluster`
are Model Garden's pieces it is made of.

Example:
  >>> strategy = strategy_from_runtime(params.runtime)   # mirrored: the CPU when there is no GPU
  >>> with strategy.scope():
  ...   model = task.build_model()
"""

import contextlib
import json
import logging
import os
from typing import Any, Optional

import tensorflow as tf

STRATEGIES = ('off', 'one_device', 'mirrored', 'multi_worker_mirrored', 'tpu')
_ALL_REDUCE = {'nccl': tf.distribute.NcclAllReduce,
               'hierarchical_copy': tf.distribute.HierarchicalCopyAllReduce}


def _devices(num_gpus: int):
  """The replica devices: `num_gpus` GPUs when asked for (as Model Garden, even when fewer are
  visible: then a warning, and TensorFlow fails when the strategy is used); 0: all visible
  GPUs, or the CPU(s) when there is none."""
  gpus = tf.config.list_logical_devices('GPU')
  if num_gpus > 0:
    if num_gpus > len(gpus):
      logging.warning('runtime.num_gpus is %d but %d GPUs are visible: the strategy names GPUs '
                      'that this process cannot use', num_gpus, len(gpus))
    return [f'/device:GPU:{i}' for i in range(num_gpus)]
  if gpus:
    return [d.name for d in gpus]
  return [d.name for d in tf.config.list_logical_devices('CPU')]


def get_distribution_strategy(distribution_strategy: str = 'mirrored', num_gpus: int = 0,
                              all_reduce_alg: Optional[str] = None, num_packs: int = 1,
                              tpu_address: Optional[str] = None,
                              **kwargs) -> tf.distribute.Strategy:
  """Returns a strategy: 'off' (the default strategy, `tf.distribute.get_strategy()`, as in
  Model Garden), 'one_device', 'mirrored', 'multi_worker_mirrored' (from TF_CONFIG) or 'tpu'.

  Args:
    distribution_strategy: the strategy name (case-insensitive).
    num_gpus: GPUs for 'mirrored'/'one_device' (0: all visible GPUs; the CPU when there is none).
    all_reduce_alg: 'nccl' or 'hierarchical_copy' for 'mirrored'; 'ring' or 'nccl' for multi-worker.
    num_packs: gradient packs of the mirrored all-reduce.
    tpu_address: the TPU name or address for 'tpu'.
    **kwargs: ignored (Model Garden passes extra runtime fields).

  Raises:
    ValueError: an unknown strategy name or all-reduce algorithm, a name that is not a string,
      a negative `num_gpus`, or several GPUs with 'off'/'one_device'.

  Example:
    >>> get_distribution_strategy('one_device').num_replicas_in_sync   # 1
  """
  del kwargs
  if num_gpus < 0:
    raise ValueError(f'runtime.num_gpus: `num_gpus` can not be negative (found {num_gpus}).')
  if not isinstance(distribution_strategy, str):
    raise ValueError(f'runtime.distribution_strategy: distribution_strategy must be a string but '
                     f'got: {distribution_strategy}. If you meant to pass the string \'off\', make '
                     'sure you add quotes around it (YAML reads off/no/false as booleans).')
  name = distribution_strategy.lower()
  if name not in STRATEGIES:
    raise ValueError(f'runtime.distribution_strategy: unknown strategy {distribution_strategy!r}; '
                     f'expected one of {list(STRATEGIES)}')
  if name == 'off':
    if num_gpus > 1:
      raise ValueError(f'When {num_gpus} GPUs are specified, distribution_strategy flag cannot be '
                       'set to `off` (use mirrored).')
    return tf.distribute.get_strategy()
  if name == 'one_device':
    if num_gpus > 1:
      raise ValueError('`OneDeviceStrategy` can not be used for more than one device '
                       f'(runtime.num_gpus={num_gpus}; use mirrored).')
    return tf.distribute.OneDeviceStrategy(_devices(num_gpus)[0])
  if name == 'mirrored':
    cross_device_ops = None
    if all_reduce_alg:
      if all_reduce_alg not in _ALL_REDUCE:
        raise ValueError(f'runtime.all_reduce_alg: {all_reduce_alg!r} is not valid. When used with '
                         f'`mirrored`, valid values for all_reduce_alg are {sorted(_ALL_REDUCE)}.')
      cross_device_ops = _ALL_REDUCE[all_reduce_alg](num_packs=num_packs)
    return tf.distribute.MirroredStrategy(devices=_devices(num_gpus),
                                          cross_device_ops=cross_device_ops)
  if name == 'multi_worker_mirrored':
    implementations = {'ring': tf.distribute.experimental.CommunicationImplementation.RING,
                       'nccl': tf.distribute.experimental.CommunicationImplementation.NCCL}
    if all_reduce_alg and all_reduce_alg not in implementations:
      raise ValueError(f'runtime.all_reduce_alg: {all_reduce_alg!r} is not valid. When used with '
                       '`multi_worker_mirrored`, valid values for all_reduce_alg are '
                       f'{sorted(implementations)}.')
    implementation = implementations.get(
        all_reduce_alg, tf.distribute.experimental.CommunicationImplementation.AUTO)
    options = tf.distribute.experimental.CommunicationOptions(implementation=implementation)
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
  resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address or '')
  tf.config.experimental_connect_to_cluster(resolver)
  tf.tpu.experimental.initialize_tpu_system(resolver)
  return tf.distribute.TPUStrategy(resolver)


def get_strategy_scope(strategy: Optional[tf.distribute.Strategy]):
  """`strategy.scope()`, or a context that does nothing when `strategy` is None.

  Example:
    >>> with get_strategy_scope(strategy):
    ...   model = build_model()
  """
  return strategy.scope() if strategy is not None else contextlib.nullcontext()


def configure_cluster(worker_hosts: Optional[str] = None, task_index: int = -1) -> int:
  """Writes TF_CONFIG from `runtime.worker_hosts`/`task_index`; returns the number of workers.

  Without `worker_hosts`, an existing TF_CONFIG is read as it is (1 when there is none).
  """
  if worker_hosts:
    workers = [w.strip() for w in worker_hosts.split(',') if w.strip()]
    if len(workers) > 1 and not 0 <= task_index < len(workers):
      raise ValueError(f'runtime.task_index must be in [0, {len(workers)}) for {len(workers)} '
                       f'worker_hosts, found {task_index}')
    if len(workers) > 1:
      os.environ['TF_CONFIG'] = json.dumps({'cluster': {'worker': workers},
                                            'task': {'type': 'worker', 'index': task_index}})
    return len(workers)
  tf_config = json.loads(os.environ.get('TF_CONFIG', '{}') or '{}')
  return len(tf_config.get('cluster', {}).get('worker', [])) or 1


def strategy_from_runtime(runtime: Any) -> tf.distribute.Strategy:
  """The strategy of a run's runtime config (`ExperimentConfig.runtime`), cluster included.

  Writes TF_CONFIG from `worker_hosts`/`task_index` when they name several workers
  (`configure_cluster`), then builds `distribution_strategy` with `num_gpus`, `all_reduce_alg`,
  `num_packs` and `tpu` (`get_distribution_strategy`; 'off' gives the default strategy).

  Args:
    runtime: a `RuntimeConfig` (or any object with its fields `distribution_strategy`,
      `num_gpus`, `all_reduce_alg`, `num_packs`, `tpu`, `worker_hosts`, `task_index`).

  Raises:
    ValueError: as `get_distribution_strategy` and `configure_cluster` (an unknown strategy or
      all-reduce algorithm, a bad `num_gpus`, a `task_index` outside the workers).

  Example:
    >>> strategy_from_runtime(params.runtime).num_replicas_in_sync   # 1 with one_device
    1
  """
  configure_cluster(runtime.worker_hosts, runtime.task_index)
  return get_distribution_strategy(
      distribution_strategy=runtime.distribution_strategy, num_gpus=runtime.num_gpus,
      all_reduce_alg=runtime.all_reduce_alg, num_packs=runtime.num_packs, tpu_address=runtime.tpu)
