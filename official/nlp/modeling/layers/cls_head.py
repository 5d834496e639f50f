"""Classification heads over one token of the sequence output (e.g. next-sentence prediction)."""

from typing import Any, Dict, Optional, Sequence, Tuple

import tensorflow as tf
import tf_keras

from official.modeling import bfloat16_sums
from official.modeling import tf_utils
from official.nlp.modeling.layers import dropout as dropout_lib
from official.nlp.modeling.layers import gaussian_process
from official.nlp.modeling.layers import spectral_normalization


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class ClassificationHead(tf_keras.layers.Layer):
  """Token `cls_token_idx` -> dense `pooler_dense` (+activation) -> dropout -> dense `logits`.

  Under mixed precision the logits are cast to float32.

  Args:
    inner_dim: width of the pooler (0: no pooler).
    num_classes: output classes.
    cls_token_idx: the classified position.
    activation: the pooler's activation.
    dropout_rate: dropout before the logits.
    initializer: kernel initializer.

  Call args:
    features: sequence output [batch, seq, hidden] (the token at `cls_token_idx` is classified),
      or already pooled [batch, hidden].
    only_project: return the pooler's output [batch, inner_dim] instead of the logits.

  Returns: float32 logits [batch, num_classes].

  Example:
    >>> head = ClassificationHead(inner_dim=16, num_classes=2, name='next_sentence')
    >>> head(tf.zeros([4, 8, 16])).shape
    TensorShape([4, 2])
  """

  def __init__(self, inner_dim: int, num_classes: int, cls_token_idx: int = 0,
               activation: Optional[str] = 'tanh', dropout_rate: float = 0.0,
               initializer: Any = 'glorot_uniform', **kwargs):
    super().__init__(autocast=False, **kwargs)  # `_pool` casts the one token it reads
    self.inner_dim = inner_dim
    self.num_classes = num_classes
    self.cls_token_idx = cls_token_idx
    self.activation = tf_utils.serialize_activation(activation)
    self.dropout_rate = dropout_rate
    self.initializer = tf_keras.initializers.get(initializer)
    # `dense` and `out_proj` are Model Garden's attribute names (object-checkpoint keys).
    self.dense = _pooler_dense(inner_dim, activation, self.initializer)
    self.dropout = dropout_lib.Dropout(dropout_rate)
    self.out_proj = tf_keras.layers.Dense(
        num_classes, kernel_initializer=tf_utils.clone_initializer(self.initializer),
        name='logits')

  def call(self, features, only_project: bool = False, training=None):
    x = _pool(features, self.cls_token_idx, self.dense, self.compute_dtype)
    if only_project:
      return x
    x = self.dropout(x, training=training)
    return tf.cast(self.out_proj(x), tf.float32)

  @property
  def pooler_dense(self) -> Optional[tf_keras.layers.Layer]:
    """The `pooler_dense` layer (None when `inner_dim` is 0)."""
    return self.dense

  @property
  def checkpoint_items(self) -> Dict[str, tf_keras.layers.Layer]:
    """`{'pooler_dense': layer}` for partial restore (empty without a pooler)."""
    return {'pooler_dense': self.dense} if self.inner_dim else {}

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(inner_dim=self.inner_dim, num_classes=self.num_classes,
                  cls_token_idx=self.cls_token_idx, activation=self.activation,
                  dropout_rate=self.dropout_rate,
                  initializer=tf_keras.initializers.serialize(self.initializer))
    return config


def _pooler_dense(inner_dim: int, activation: Optional[str],
                  initializer: Any) -> Optional[tf_keras.layers.Layer]:
  """A head's `pooler_dense` layer (`inner_dim` units, then `activation`).

  None when `inner_dim` is 0.
  """
  if not inner_dim:
    return None
  return tf_keras.layers.Dense(inner_dim, activation=tf_utils.get_activation(activation),
                               kernel_initializer=tf_utils.clone_initializer(initializer),
                               name='pooler_dense')


def _pool(features: tf.Tensor, cls_token_idx: int, dense: Optional[tf_keras.layers.Layer],
          dtype: tf.DType) -> tf.Tensor:
  """The token at `cls_token_idx` of [batch, seq, hidden] (a [batch, hidden] input as is) in
  `dtype`, then `dense` when given.

  The heads take their input as it comes (no Keras autocast) and cast the one token: a float32
  sequence output is not copied whole into bfloat16, nor its gradient back.
  """
  x = features[:, cls_token_idx, :] if features.shape.rank == 3 else features
  x = tf.cast(x, dtype)
  return dense(x) if dense is not None else x


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class MultiClsHeads(tf_keras.layers.Layer):
  """Several classification problems over one token, sharing one pooler (Model Garden's layer).

  Token `cls_token_idx` -> dense `pooler_dense` (+activation, when `inner_dim`) -> dropout ->
  one dense layer per problem, named after it.

  Args:
    inner_dim: width of the shared pooler (0: no pooler).
    cls_list: `(name, num_classes)` pairs, one per problem; names must be unique.
    cls_token_idx: the classified position.
    activation: the pooler's activation.
    dropout_rate: dropout before the logits.
    initializer: kernel initializer.

  Call args:
    features: sequence output [batch, seq, hidden] or pooled [batch, hidden].
    only_project: return the pooler's output [batch, inner_dim] instead of the logits.

  Returns: a dict of float32 logits [batch, num_classes] keyed by problem name; inside
  `BertPretrainerV2` each becomes an output of that name.

  Example:
    >>> heads = MultiClsHeads(inner_dim=8, cls_list=[('topic', 5), ('spam', 2)])
    >>> {k: v.shape for k, v in heads(tf.zeros([4, 6, 16])).items()}
    {'topic': TensorShape([4, 5]), 'spam': TensorShape([4, 2])}
  """

  def __init__(self, inner_dim: int, cls_list: Sequence[Tuple[str, int]], cls_token_idx: int = 0,
               activation: Optional[str] = 'tanh', dropout_rate: float = 0.0,
               initializer: Any = 'glorot_uniform', **kwargs):
    super().__init__(autocast=False, **kwargs)  # `_pool` casts the one token it reads
    names = [name for name, _ in cls_list]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
      raise ValueError(f'MultiClsHeads problem names must be unique; duplicated: {duplicates}')
    self.inner_dim = inner_dim
    self.cls_list = [(str(name), int(num_classes)) for name, num_classes in cls_list]
    self.cls_token_idx = cls_token_idx
    self.activation = tf_utils.serialize_activation(activation)
    self.dropout_rate = dropout_rate
    self.initializer = tf_keras.initializers.get(initializer)
    # `dense` and `out_projs` are Model Garden's attribute names (object-checkpoint keys).
    self.dense = _pooler_dense(inner_dim, activation, self.initializer)
    self.dropout = dropout_lib.Dropout(dropout_rate)
    self.out_projs = [
        tf_keras.layers.Dense(num_classes,
                              kernel_initializer=tf_utils.clone_initializer(self.initializer),
                              name=name)
        for name, num_classes in self.cls_list]

  def call(self, features, only_project: bool = False, training=None):
    x = _pool(features, self.cls_token_idx, self.dense, self.compute_dtype)
    if only_project:
      return x
    x = self.dropout(x, training=training)
    return {layer.name: tf.cast(layer(x), tf.float32) for layer in self.out_projs}

  @property
  def checkpoint_items(self) -> Dict[str, tf_keras.layers.Layer]:
    """`pooler_dense` (with a pooler) and each problem's logits layer by name."""
    items = {'pooler_dense': self.dense} if self.dense is not None else {}
    items.update({layer.name: layer for layer in self.out_projs})
    return items

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(inner_dim=self.inner_dim, cls_list=[list(pair) for pair in self.cls_list],
                  cls_token_idx=self.cls_token_idx, activation=self.activation,
                  dropout_rate=self.dropout_rate,
                  initializer=tf_keras.initializers.serialize(self.initializer))
    return config


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class PerQueryDenseHead(tf_keras.layers.Layer):
  """A separate dense projection per query position: [batch, queries, hidden] -> [..., features].

  For EncT5-style heads (Model Garden's layer): query `q` is multiplied by its own kernel
  [hidden, features] (plus its own bias with `use_bias`).

  Args:
    num_queries: query positions in the input (each gets its own kernel).
    features: output width per query.
    use_bias: add a bias [num_queries, features].
    kernel_initializer: the kernel's initializer (the bias starts at zero).

  Example:
    >>> PerQueryDenseHead(num_queries=3, features=2)(tf.zeros([4, 3, 8])).shape
    TensorShape([4, 3, 2])
  """

  def __init__(self, num_queries: int, features: int, use_bias: bool = False,
               kernel_initializer: Any = 'glorot_uniform', **kwargs):
    super().__init__(**kwargs)
    self.num_queries = num_queries
    self.features = features
    self.use_bias = use_bias
    self.kernel_initializer = tf_keras.initializers.get(kernel_initializer)

  def build(self, input_shape):
    hidden = int(input_shape[-1])
    self.kernel = self.add_weight('kernel', shape=[self.num_queries, hidden, self.features],
                                  initializer=self.kernel_initializer)
    self.bias = None
    if self.use_bias:
      self.bias = self.add_weight('bias', shape=[self.num_queries, self.features],
                                  initializer='zeros')
    super().build(input_shape)

  def call(self, inputs):
    outputs = bfloat16_sums.einsum('bqh,qhf->bqf', inputs, tf.cast(self.kernel, inputs.dtype))
    if self.bias is not None:
      outputs += tf.cast(self.bias, outputs.dtype)
    return outputs

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(num_queries=self.num_queries, features=self.features, use_bias=self.use_bias,
                  kernel_initializer=tf_keras.initializers.serialize(self.kernel_initializer))
    return config


# Spectral-normalization and Gaussian-process arguments of `GaussianProcessClassificationHead`
# with their defaults (Model Garden's).
_SPEC_NORM_DEFAULTS = {'iteration': 1, 'norm_multiplier': 0.99}
_GP_DEFAULTS = {'num_inducing': 1024, 'normalize_input': True, 'gp_cov_momentum': 0.999,
                'gp_cov_ridge_penalty': 1.0, 'scale_random_features': False,
                'l2_regularization': 1e-6, 'return_gp_cov': True,
                'custom_random_features_initializer': 'random_normal'}


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class GaussianProcessClassificationHead(ClassificationHead):
  """SNGP classification head (Liu et al. 2020): a spectral-normalized pooler and a
  random-feature Gaussian process instead of the dense logits layer (Model Garden's layer).

  Training calls return plain logits; other calls return mean-field adjusted logits
  (`logits / sqrt(1 + temperature * variance)`, when `temperature` is set) and, with
  `return_covmat`, the logits' covariance across the batch.

  Args:
    inner_dim, num_classes, cls_token_idx, activation, dropout_rate, initializer: as
      `ClassificationHead`.
    use_spec_norm: spectral-normalize the pooler (`SpectralNormalization`).
    use_gp_layer: a `RandomFeatureGaussianProcess` named `logits` instead of a dense layer.
    temperature: the mean-field factor (None: logits unadjusted).
    **kwargs: `iteration`, `norm_multiplier` (spectral normalization); `num_inducing`,
      `normalize_input`, `gp_cov_momentum`, `gp_cov_ridge_penalty`, `scale_random_features`,
      `l2_regularization`, `return_gp_cov`, `custom_random_features_initializer` (the Gaussian
      process); other keyword arguments go to the Keras layer.

  Call args: features [batch, seq, hidden]; training; return_covmat.

  Returns: float32 logits [batch, num_classes] (and the covariance [batch, batch]).

  Example:
    >>> head = GaussianProcessClassificationHead(inner_dim=8, num_classes=2, num_inducing=64)
    >>> logits, covmat = head(tf.zeros([4, 6, 16]), return_covmat=True)
  """

  def __init__(self, inner_dim: int, num_classes: int, cls_token_idx: int = 0,
               activation: Optional[str] = 'tanh', dropout_rate: float = 0.0,
               initializer: Any = 'glorot_uniform', use_spec_norm: bool = True,
               use_gp_layer: bool = True, temperature: Optional[float] = None, **kwargs):
    self.spec_norm_kwargs = {k: kwargs.pop(k, v) for k, v in _SPEC_NORM_DEFAULTS.items()}
    self.gp_layer_kwargs = {k: kwargs.pop(k, v) for k, v in _GP_DEFAULTS.items()}
    super().__init__(inner_dim=inner_dim, num_classes=num_classes, cls_token_idx=cls_token_idx,
                     activation=activation, dropout_rate=dropout_rate, initializer=initializer,
                     **kwargs)
    self.use_spec_norm = use_spec_norm
    self.use_gp_layer = use_gp_layer
    self.temperature = temperature
    if use_spec_norm and self.dense is not None:
      self.dense = spectral_normalization.SpectralNormalization(
          self.dense, inhere_layer_name=True, **self.spec_norm_kwargs)
    if use_gp_layer:
      self.out_proj = gaussian_process.RandomFeatureGaussianProcess(
          num_classes, kernel_initializer=tf_utils.clone_initializer(self.initializer),
          name='logits', **self.gp_layer_kwargs)

  def call(self, features, training=None, return_covmat: bool = False):
    training = dropout_lib.resolve_training(training)
    training = training if isinstance(training, bool) else False
    x = features[:, self.cls_token_idx, :] if features.shape.rank == 3 else features
    if self.dense is not None:
      x = self.dense(x, training=training)
    x = self.dropout(x, training=training)
    covmat = None
    if self.use_gp_layer:
      outputs = self.out_proj(x, training=training)
      logits, covmat = outputs if isinstance(outputs, (tuple, list)) else (outputs, None)
    else:
      logits = self.out_proj(x)
    logits = tf.cast(logits, tf.float32)
    if not training:
      logits = gaussian_process.mean_field_logits(logits, covmat, self.temperature)
    if return_covmat and covmat is not None:
      return logits, covmat
    return logits

  def reset_covariance_matrix(self):
    """Resets the Gaussian process' precision to its prior (e.g. at each epoch)."""
    if self.use_gp_layer and self.out_proj.built:
      self.out_proj.reset_covariance_matrix()

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(use_spec_norm=self.use_spec_norm, use_gp_layer=self.use_gp_layer,
                  temperature=self.temperature, **self.spec_norm_kwargs, **self.gp_layer_kwargs)
    return config
