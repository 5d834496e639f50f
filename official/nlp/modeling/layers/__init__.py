"""Layers of the BERT models (Model Garden names) and the Keras-NLP masked-LM API.

Every layer is registered as Keras-serializable (`package='mlm_garden'`) and round-trips through
`get_config`/`from_config`.
"""

from official.nlp.modeling.layers.cls_head import ClassificationHead
from official.nlp.modeling.layers.cls_head import GaussianProcessClassificationHead
from official.nlp.modeling.layers.cls_head import MultiClsHeads
from official.nlp.modeling.layers.cls_head import PerQueryDenseHead
from official.nlp.modeling.layers.dropout import Dropout
from official.nlp.modeling.layers.efficient_attention import EfficientAttention
from official.nlp.modeling.layers.gaussian_process import RandomFeatureGaussianProcess
from official.nlp.modeling.layers.masked_lm import MaskedLM
from official.nlp.modeling.layers.masked_lm_head import MaskedLMHead
from official.nlp.modeling.layers.masked_lm_mask_generator import MaskedLMMaskGenerator
from official.nlp.modeling.layers.masked_softmax import MaskedSoftmax
from official.nlp.modeling.layers.on_device_embedding import OnDeviceEmbedding
from official.nlp.modeling.layers.position_embedding import PositionEmbedding
from official.nlp.modeling.layers.position_embedding import RelativePositionBias
from official.nlp.modeling.layers.position_embedding import RelativePositionEmbedding
from official.nlp.modeling.layers.reversible_embedding import ReversibleEmbedding
from official.nlp.modeling.layers.self_attention import MultiHeadSelfAttention
from official.nlp.modeling.layers.spectral_normalization import SpectralNormalization
from official.nlp.modeling.layers.transformer_encoder_block import TransformerEncoderBlock
