"""Model Garden's `hyperparams`: dataclass configs with YAML I/O, strict overrides, validation."""

from official.modeling.hyperparams import base_config
from official.modeling.hyperparams import flat_oneof
from official.modeling.hyperparams import oneof
from official.modeling.hyperparams import params_dict
from official.modeling.hyperparams.base_config import bind
from official.modeling.hyperparams.base_config import Config
from official.modeling.hyperparams.base_config import field
from official.modeling.hyperparams.base_config import OneOfConfig
from official.modeling.hyperparams.base_config import unsupported
from official.modeling.hyperparams.flat_oneof import FlatOneOfConfig
from official.modeling.hyperparams.flat_oneof import nest_flat_fields
from official.modeling.hyperparams.params_dict import ConfigError
from official.modeling.hyperparams.params_dict import ConfigKeyError
from official.modeling.hyperparams.params_dict import ConfigTypeError
from official.modeling.hyperparams.params_dict import nested_csv_str_to_json_str
from official.modeling.hyperparams.params_dict import override_params_dict
from official.modeling.hyperparams.params_dict import ParamsDict
from official.modeling.hyperparams.params_dict import parse_override
from official.modeling.hyperparams.params_dict import parse_override_string
from official.modeling.hyperparams.params_dict import read_yaml
from official.modeling.hyperparams.params_dict import read_yaml_to_params_dict
from official.modeling.hyperparams.params_dict import save_params_dict_to_yaml
from official.modeling.hyperparams.params_dict import save_yaml
