"""Tests of official/nlp/tasks/translation.py: importable; every name says it is out of scope."""

import pytest


def test_import_works_and_any_name_names_the_scope():
  from official.nlp.tasks import translation  # pylint: disable=g-import-not-at-top
  with pytest.raises(AttributeError) as raised:
    translation.TranslationTask  # pylint: disable=pointless-statement
  message = str(raised.value)
  assert message.startswith('official.nlp.tasks.translation.TranslationTask: translation '
                            "(seq2seq, WMT, T5) is out of mlm-garden's scope")
  assert 'use tf-models-official in its own environment' in message
  assert not hasattr(translation, 'TranslationConfig')
  with pytest.raises(AttributeError, match='^__wrapped__$'):
    translation.__wrapped__  # pylint: disable=pointless-statement
