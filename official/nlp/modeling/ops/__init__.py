"""Plain TensorFlow ops of the NLP models: no Keras, so data pipelines may use them too."""
