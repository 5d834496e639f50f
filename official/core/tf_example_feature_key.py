"""Feature-key classes: dataclasses whose fields are `tf.train.Example` feature names.

A subclass lists the names of one kind of feature as string fields; an instance built with a
prefix puts `<prefix>/` before every name, so one record can hold several features of the same
kind. Every class of this module is such a dataclass (Model Garden checks it).

Example:
  >>> @dataclass
  ... class TextFeatureKey(TfExampleFeatureKeyBase):
  ...   text: str = 'text/raw'
  ...   ids: str = 'text/ids'
  >>> TextFeatureKey().ids
  'text/ids'
  >>> TextFeatureKey('query').ids
  'query/text/ids'
"""

import dataclasses
from typing import Optional

# The subclasses' decorator: their `__init__` is the base class's (which takes the prefix).
dataclass = dataclasses.dataclass(init=False)


@dataclass
class TfExampleFeatureKeyBase:
  """Base of the feature-key dataclasses: `__init__(prefix)` prefixes every field's name.

  Args:
    prefix: put before every feature name as `<prefix>/<name>`; None or '' keeps the names.
  """

  def __init__(self, prefix: Optional[str] = None):
    if not prefix:
      return
    for field in dataclasses.fields(self):
      setattr(self, field.name, f'{prefix}/{getattr(self, field.name)}')
