"""Importing this module registers every built-in experiment and task.

It is the `mlm_garden.experiments` entry point of the package (setup.py), which
`official.core.exp_factory` loads on the first lookup of an unknown experiment; importing it
directly (as Model Garden's scripts do) works too. It sits at the top of the import layers
(ARCHITECTURE.md), whatever its Model Garden path says.
"""

# pylint: disable=unused-import
from official.nlp.configs import finetuning_experiments
from official.nlp.configs import pretraining_experiments
from official.nlp.tasks import masked_lm
from official.nlp.tasks import question_answering
from official.nlp.tasks import sentence_prediction
from official.nlp.tasks import tagging
from official.utils.testing import mock_task  # Model Garden registers the 'mock' experiment here
