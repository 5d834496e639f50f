"""Plain TensorFlow ops of the NLP models: no Keras, so data pipelines may use them too."""

from official.nlp.modeling.ops.segment_extractor import get_next_sentence_labels
from official.nlp.modeling.ops.segment_extractor import get_sentence_order_labels
