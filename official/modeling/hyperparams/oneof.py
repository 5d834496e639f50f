"""`OneOfConfig`: a config whose `type` field selects one of its member configs (Model Garden path).

Example:
  >>> @dataclasses.dataclass
  ... class Backbone(OneOfConfig):
  ...   type: Optional[str] = 'resnet'
  ...   resnet: ResNet = dataclasses.field(default_factory=ResNet)
  >>> Backbone().get()
  ResNet(model_depth=50)
"""

from official.modeling.hyperparams.base_config import OneOfConfig

__all__ = ['OneOfConfig']
