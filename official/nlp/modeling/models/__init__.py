"""Models: networks with task heads."""

from official.nlp.modeling.models.bert_pretrainer import BertPretrainerV2
