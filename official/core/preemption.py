"""Stopping a training run cleanly on SIGTERM or SIGINT (preemption, `kill`, Ctrl-C).

Python runs signal handlers only between bytecodes of the main thread, which is blocked while a
`tf.function` runs a loop of many steps. `StopSignal` therefore also asks Python to write each
signal's number to a socket (`signal.set_wakeup_fd`); a watcher thread blocked on that socket sets
a TensorFlow variable that the train loop reads before every step, so the loop ends after the step
in progress and the trainer saves a checkpoint at that step.

A second SIGINT (Ctrl-C pressed twice) exits at once without saving.

Example:
  >>> with StopSignal() as stop:
  ...   for _ in tf.range(num_steps):      # inside the train loop's tf.function
  ...     if stop.requested:
  ...       break
  ...     train_step()
  >>> stop.signal_name   # 'SIGTERM' when one arrived, else None
"""

import logging
import os
import signal
import socket
import threading
from typing import Optional, Sequence

import tensorflow as tf

DEFAULT_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopSignal:
  """Turns SIGTERM/SIGINT into `requested` (a boolean `tf.Variable` read inside compiled loops).

  Use as a context manager around training: entering installs the handlers (main thread only;
  elsewhere it does nothing and logs why), leaving restores the previous ones.

  Args:
    signals: the signals that request a stop.
  """

  def __init__(self, signals: Sequence[int] = DEFAULT_SIGNALS):
    self._signals = tuple(signals)
    # Created outside any strategy scope: one host variable that every loop reads.
    with tf.init_scope():
      self.requested = tf.Variable(False, trainable=False, name='stop_requested')
    self.signal_name: Optional[str] = None
    self._previous = {}
    self._previous_wakeup_fd = -1
    self._sockets = None
    self._thread = None
    self._interrupts = 0

  # ---- context manager --------------------------------------------------------------------------
  def __enter__(self) -> 'StopSignal':
    if threading.current_thread() is not threading.main_thread():
      logging.info('StopSignal: not in the main thread; SIGTERM/SIGINT keep their handlers.')
      return self
    reader, writer = socket.socketpair()
    reader.setblocking(True)
    writer.setblocking(False)
    self._sockets = (reader, writer)
    for sig in self._signals:
      self._previous[sig] = signal.signal(sig, self._on_signal)
    self._previous_wakeup_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    self._thread = threading.Thread(target=self._watch, name='StopSignalWatcher', daemon=True)
    self._thread.start()
    return self

  def __exit__(self, *exc_info) -> None:
    if self._sockets is None:
      return
    signal.set_wakeup_fd(self._previous_wakeup_fd)
    for sig, handler in self._previous.items():
      signal.signal(sig, handler)
    self._previous = {}
    reader, writer = self._sockets
    writer.close()  # ends the watcher's recv
    self._thread.join(timeout=5)
    reader.close()
    self._sockets = None

  # ---- signal side ------------------------------------------------------------------------------
  def _on_signal(self, signum, frame) -> None:
    """The Python-level handler; it runs in the main thread once that executes bytecode again,
    after the watcher thread has already seen the same delivery, so it only makes sure the stop
    is recorded."""
    del frame
    self._request(signum)

  def _watch(self) -> None:
    """Watcher thread: wakes up on the wakeup-fd byte even while the main thread is in TF."""
    reader = self._sockets[0]
    while True:
      try:
        data = reader.recv(64)
      except OSError:
        return
      if not data:
        return
      for signum in data:
        if signum not in self._signals:
          continue
        if signum == signal.SIGINT:
          self._interrupts += 1
          if self._interrupts > 1:
            logging.warning('SIGINT again: exiting without saving.')
            os._exit(130)  # pylint: disable=protected-access
        self._request(signum)

  def _request(self, signum: int) -> None:
    if self.signal_name is None:
      self.signal_name = signal.Signals(signum).name
      logging.warning('%s received: stopping after the current step and saving a checkpoint '
                      '(Ctrl-C again exits without saving).', self.signal_name)
    self.requested.assign(True)
