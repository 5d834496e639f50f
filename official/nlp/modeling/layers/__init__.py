"""Layers of the BERT models (Model Garden names) and the Keras-NLP masked-LM API.

Every layer is registered as Keras-serializable (`package='mlm_garden'`) and round-trips through
`get_config`/`from_config`.
"""

from official.nlp.modeling.layers.attention import CachedAttention
from official.nlp.modeling.layers.attention import MultiHeadAttention
from official.nlp.modeling.layers.cast_to_float32 import CastToFloat32
from official.nlp.modeling.layers.cls_head import ClassificationHead
from official.nlp.modeling.layers.cls_head import GaussianProcessClassificationHead
from official.nlp.modeling.layers.cls_head import MultiClsHeads
from official.nlp.modeling.layers.cls_head import PerQueryDenseHead
from official.nlp.modeling.layers.dropout import Dropout
from official.nlp.modeling.layers.efficient_attention import EfficientAttention
from official.nlp.modeling.layers.factorized_embedding import FactorizedEmbedding
from official.nlp.modeling.layers.fused_layer_norm import FusedLayerNormalization
from official.nlp.modeling.layers.gaussian_process import RandomFeatureGaussianProcess
from official.nlp.modeling.layers.gated_feedforward import GatedFeedforward
from official.nlp.modeling.layers.masked_lm import MaskedLM
from official.nlp.modeling.layers.masked_lm_head import MaskedLMHead
from official.nlp.modeling.layers.masked_lm_mask_generator import MaskedLMMaskGenerator
from official.nlp.modeling.layers.masked_softmax import MaskedSoftmax
from official.nlp.modeling.layers.mat_mul_with_margin import MatMulWithMargin
from official.nlp.modeling.layers.on_device_embedding import OnDeviceEmbedding
from official.nlp.modeling.layers.pack_optimization import PackBertEmbeddings
from official.nlp.modeling.layers.pack_optimization import StridedReZeroTransformer
from official.nlp.modeling.layers.pack_optimization import StridedTransformerEncoderBlock
from official.nlp.modeling.layers.pack_optimization import StridedTransformerScaffold
from official.nlp.modeling.layers.position_embedding import PositionEmbedding
from official.nlp.modeling.layers.position_embedding import RelativePositionBias
from official.nlp.modeling.layers.position_embedding import RelativePositionEmbedding
from official.nlp.modeling.layers.reversible_embedding import ReversibleEmbedding
from official.nlp.modeling.layers.rezero_transformer import ReZeroTransformer
from official.nlp.modeling.layers.rotary_embedding import RotaryEmbedding
from official.nlp.modeling.layers.self_attention import MultiHeadSelfAttention
from official.nlp.modeling.layers.self_attention_mask import SelfAttentionMask
from official.nlp.modeling.layers.self_attention_mask import get_mask
from official.nlp.modeling.layers.spectral_normalization import SpectralNormalization
from official.nlp.modeling.layers.spectral_normalization import SpectralNormalizationConv2D
from official.nlp.modeling.layers.talking_heads_attention import TalkingHeadsAttention
from official.nlp.modeling.layers.text_layers import BertPackInputs
from official.nlp.modeling.layers.text_layers import BertTokenizer
from official.nlp.modeling.layers.text_layers import FastWordpieceBertTokenizer
from official.nlp.modeling.layers.text_layers import SentencepieceTokenizer
from official.nlp.modeling.layers.transformer import Transformer
from official.nlp.modeling.layers.transformer import TransformerDecoderBlock
from official.nlp.modeling.layers.transformer_encoder_block import TransformerEncoderBlock
from official.nlp.modeling.layers.transformer_scaffold import TransformerScaffold
