"""Networks: encoders that map token ids to hidden states."""

from official.nlp.modeling.networks.bert_encoder import BertEncoder
from official.nlp.modeling.networks.bert_encoder import BertEncoderV2
from official.nlp.modeling.networks.span_labeling import SpanLabeling
