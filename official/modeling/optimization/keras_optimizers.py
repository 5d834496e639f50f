"""`SGD`, `Adam`, `RMSprop`, `Adagrad`: tf_keras's optimizers, clipping the cross-replica summed
gradients.

They accept the same arguments as their `tf_keras.optimizers` namesakes plus `gradient_transformers`
and `gradient_aggregator`; see `gradient_clipping` for the order of clipping steps.
"""

import tf_keras

from official.modeling.optimization import gradient_clipping

_register = tf_keras.utils.register_keras_serializable(package='mlm_garden')


@_register
class SGD(gradient_clipping.GradientClippingMixin, tf_keras.optimizers.SGD):
  """`tf_keras.optimizers.SGD` (momentum, nesterov) with explicit post-aggregation clipping.

  Example:
    >>> opt = SGD(learning_rate=0.1, momentum=0.9, global_clipnorm=1.0)
  """


@_register
class Adam(gradient_clipping.GradientClippingMixin, tf_keras.optimizers.Adam):
  """`tf_keras.optimizers.Adam` with explicit post-aggregation clipping.

  Example:
    >>> opt = Adam(learning_rate=1e-3, epsilon=1e-7, clipnorm=1.0)
  """


@_register
class RMSprop(gradient_clipping.GradientClippingMixin, tf_keras.optimizers.RMSprop):
  """`tf_keras.optimizers.RMSprop` (rho, momentum, centered) with explicit post-aggregation
  clipping.

  Example:
    >>> opt = RMSprop(learning_rate=1e-3, rho=0.9, clipvalue=1.0)
  """


@_register
class Adagrad(gradient_clipping.GradientClippingMixin, tf_keras.optimizers.Adagrad):
  """`tf_keras.optimizers.Adagrad` with explicit post-aggregation clipping.

  Example:
    >>> opt = Adagrad(learning_rate=0.1, initial_accumulator_value=0.1)
  """
