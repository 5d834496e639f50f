"""Activation functions under Model Garden's names (`official.modeling.activations`).

Example:
  >>> from official.modeling import activations
  >>> activations.gelu([[0.25, 0.0, -0.25]])  # the tanh approximation, as in BERT
"""

from official.modeling.activations.gelu import gelu
from official.modeling.activations.mish import mish
from official.modeling.activations.relu import relu6
from official.modeling.activations.sigmoid import hard_sigmoid
from official.modeling.activations.swish import hard_swish
from official.modeling.activations.swish import identity
from official.modeling.activations.swish import simple_swish
