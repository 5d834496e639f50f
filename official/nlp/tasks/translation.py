"""Model Garden's translation task is out of mlm-garden's scope (seq2seq); this module says so.

Importing it works, so that code which imports it beside the BERT-family tasks (e.g. Model Garden's
serving tests) runs its other parts; any name read from it raises an AttributeError that names what
mlm-garden covers instead.

Example:
  >>> from official.nlp.tasks import translation
  >>> translation.TranslationTask   # AttributeError: ... translation (seq2seq) is out of scope ...
"""

_MESSAGE = ('official.nlp.tasks.translation.{name}: translation (seq2seq, WMT, T5) is out of '
            "mlm-garden's scope, which covers BERT-family encoders (bert, bert_v2, albert, "
            'ELECTRA) with the masked_lm, electra, sentence_prediction, tagging, '
            'question_answering and dual_encoder tasks; use tf-models-official in its own '
            'environment for translation')


def __getattr__(name: str):
  if name.startswith('__'):
    raise AttributeError(name)
  raise AttributeError(_MESSAGE.format(name=name))
