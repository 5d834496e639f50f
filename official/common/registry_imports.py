"""Importing this module registers every built-in experiment and task.

`official/nlp/train.py` imports it; user code that calls `exp_factory.get_exp_config` directly should
import it too.
"""

# pylint: disable=unused-import
from official.nlp.configs import finetuning_experiments
from official.nlp.configs import pretraining_experiments
from official.nlp.tasks import masked_lm
from official.nlp.tasks import question_answering
from official.nlp.tasks import sentence_prediction
from official.nlp.tasks import tagging
