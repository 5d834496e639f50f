"""Model Garden's NLP tasks: each a `base_task.Task` with its config (`tfm.nlp.tasks`)."""

from official.nlp.tasks.electra_task import ElectraPretrainConfig
from official.nlp.tasks.electra_task import ElectraPretrainTask
from official.nlp.tasks.masked_lm import MaskedLMConfig
from official.nlp.tasks.masked_lm import MaskedLMTask
from official.nlp.tasks.question_answering import QuestionAnsweringConfig
from official.nlp.tasks.question_answering import QuestionAnsweringTask
from official.nlp.tasks.sentence_prediction import SentencePredictionConfig
from official.nlp.tasks.sentence_prediction import SentencePredictionTask
from official.nlp.tasks.tagging import TaggingConfig
from official.nlp.tasks.tagging import TaggingTask
from official.nlp.tasks.dual_encoder import DualEncoderConfig
from official.nlp.tasks.dual_encoder import DualEncoderTask
