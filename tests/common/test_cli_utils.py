"""Tests for official/common/cli_utils.py: one-line errors, output-path checks, renamed flags."""

import argparse
import errno
import os

import pytest
from absl import flags

from official.common import cli_utils


def test_error_prints_one_line_and_returns_the_status(capsys):
  assert cli_utils.error('prog', 'bad\n  thing\nhere') == 1
  assert cli_utils.error('prog', 'bad flag', status=2) == 2
  assert capsys.readouterr().err == 'prog: error: bad thing here\nprog: error: bad flag\n'


def test_bad_flag_is_one_line_with_status_2(capsys):
  fv = flags.FlagValues()
  flags.DEFINE_integer('top_k', 5, 'k', lower_bound=1, flag_values=fv)
  assert cli_utils.parse_flags(fv, ['prog', '--top_k=0'], 'prog') == 2
  err = capsys.readouterr().err
  assert err.count('\n') == 1
  assert err.startswith('prog: error: flag --top_k=0: ') and err.endswith(
      '(--help lists the flags)\n')


RENAMED = {'train_minutes': 'minutes', 'export_dir': 'output_dir', 'pin': 'pin_cores'}


def test_renamed_flags_spells_old_names_the_new_way_with_one_note_each(capsys):
  argv = ['prog', '--train_minutes=2', '--export_dir', 'out', '--nopin', '--train_minutes', '3',
          '--train_steps=5', '--export_dirs=x', '-v', 'train_minutes', '--pin', '--minutes=4']
  assert cli_utils.renamed_flags(argv, RENAMED, 'prog') == [
      'prog', '--minutes=2', '--output_dir', 'out', '--nopin_cores', '--minutes', '3',
      '--train_steps=5', '--export_dirs=x', '-v', 'train_minutes', '--pin_cores', '--minutes=4']
  assert capsys.readouterr().err == (
      'prog: note: --train_minutes is now --minutes (the old name still works)\n'
      'prog: note: --export_dir is now --output_dir (the old name still works)\n'
      'prog: note: --pin is now --pin_cores (the old name still works)\n')


def test_renamed_flags_leaves_a_command_line_of_new_names_alone(capsys):
  argv = ['--minutes=2', '--output_dir=out', '--nopin_cores', '--', 'x']
  assert cli_utils.renamed_flags(argv, RENAMED, 'prog') == argv
  assert cli_utils.renamed_flags([], RENAMED, 'prog') == []
  assert capsys.readouterr().err == ''
  # After a bare `--` come arguments, not flags: an old name there stays as written.
  assert cli_utils.renamed_flags(['--train_minutes=1', '--', '--train_minutes=2'], RENAMED,
                                 'prog') == ['--minutes=1', '--', '--train_minutes=2']


def test_renamed_flags_feed_absl_and_argparse(capsys):
  fv = flags.FlagValues()
  flags.DEFINE_float('minutes', 1.0, 'budget', flag_values=fv)
  flags.DEFINE_boolean('pin_cores', True, 'pin', flag_values=fv)
  flags.DEFINE_string('output_dir', None, 'out', flag_values=fv)
  argv = cli_utils.renamed_flags(['prog', '--train_minutes', '0.5', '--nopin',
                                  '--export_dir=runs/x'], RENAMED, 'prog')
  assert cli_utils.parse_flags(fv, argv, 'prog') is None
  assert (fv.minutes, fv.pin_cores, fv.output_dir) == (0.5, False, 'runs/x')
  assert capsys.readouterr().err.count('note:') == 3

  parser = argparse.ArgumentParser()
  parser.add_argument('--minutes', type=float, default=1.0)
  args = parser.parse_args(cli_utils.renamed_flags(['--train_minutes=0.25'], RENAMED, 'prog'))
  assert args.minutes == 0.25
  assert capsys.readouterr().err == (
      'prog: note: --train_minutes is now --minutes (the old name still works)\n')


def test_message_of_os_errors_names_the_path():
  full = OSError(errno.ENOSPC, 'No space left on device', '/data/out.npy')
  assert cli_utils.message_of(full) == (
      '/data/out.npy: no space left on device; expected room for the output (free some space '
      'or choose another path) (errno 28)')
  denied = PermissionError(errno.EACCES, 'Permission denied', '/ro/x')
  assert cli_utils.message_of(denied) == (
      '/ro/x: permission denied; expected a path this user may read or write (errno 13)')
  read_only = OSError(errno.EROFS, 'Read-only file system', '/mnt/out')
  assert cli_utils.message_of(read_only) == (
      '/mnt/out: read-only file system; expected a writable file system (errno 30)')
  assert cli_utils.message_of(ValueError('a\nb')) == 'a b'


def test_check_output_dir(tmp_path):
  new = tmp_path / 'new'
  assert cli_utils.check_output_dir(str(new), '--out') is False
  new.mkdir()
  assert cli_utils.check_output_dir(str(new), '--out') is False  # empty
  (new / 'a.txt').write_text('x')
  with pytest.raises(ValueError, match=f'^--out={new}: not empty \\(holds a.txt\\); expected a '
                     'new or empty directory, or pass --overwrite to replace it$'):
    cli_utils.check_output_dir(str(new), '--out')
  assert cli_utils.check_output_dir(str(new), '--out', overwrite=True) is True
  with pytest.raises(ValueError, match='which --overwrite does not replace'):
    cli_utils.check_output_dir(str(new), '--out', overwrite=True, replaceable=lambda p: False)

  a_file = tmp_path / 'file'
  a_file.write_text('x')
  with pytest.raises(ValueError, match=f'^--out={a_file}: a file; expected a directory'):
    cli_utils.check_output_dir(str(a_file), '--out', overwrite=True)
  under = a_file / 'sub' / 'dir'
  with pytest.raises(ValueError, match=f'^--out={under}: {a_file} is a file; expected a '
                     'directory there$'):
    cli_utils.check_output_dir(str(under), '--out')


def test_check_output_paths_refuse_read_only_locations(tmp_path, monkeypatch):
  # The tests may run as root, for whom chmod does not deny writes: deny them in os.access.
  read_only = tmp_path / 'read_only'
  read_only.mkdir()
  real_access = os.access
  monkeypatch.setattr(cli_utils.os, 'access',
                      lambda p, mode: False if str(p).startswith(str(read_only)) else
                      real_access(p, mode))
  with pytest.raises(ValueError, match=f'^--out={read_only}: not writable; expected a writable '
                     'directory$'):
    cli_utils.check_output_dir(str(read_only), '--out')
  inside = read_only / 'export'
  with pytest.raises(ValueError, match=f'^--out={inside}: cannot create it in {read_only} \\(not '
                     'writable\\); expected a writable location$'):
    cli_utils.check_output_dir(str(inside), '--out')
  with pytest.raises(ValueError, match=f'cannot create it in {read_only}'):
    cli_utils.check_output_file(str(read_only / 'x.npy'), '--output_file')


def test_check_output_file(tmp_path):
  out = tmp_path / 'sub' / 'x.npy'
  cli_utils.check_output_file(str(out), '--output_file')  # a missing parent is created later
  cli_utils.check_output_file('-', '--output_file')
  out.parent.mkdir()
  out.write_text('x')
  with pytest.raises(ValueError, match=f'^--output_file={out}: exists; expected a new file, or '
                     'pass --overwrite to replace it$'):
    cli_utils.check_output_file(str(out), '--output_file')
  cli_utils.check_output_file(str(out), '--output_file', overwrite=True)
  with pytest.raises(ValueError, match=f'^--output_file={tmp_path}: a directory; expected a file'):
    cli_utils.check_output_file(str(tmp_path), '--output_file', overwrite=True)
  with pytest.raises(ValueError, match=f'{out} is a file; expected a directory there'):
    cli_utils.check_output_file(str(out / 'y.npy'), '--output_file')
