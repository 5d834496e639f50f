"""Helpers for Orbit runners: global step, datasets, loops, summaries, epochs."""

from orbit.utils.common import create_global_step
from orbit.utils.common import get_value
from orbit.utils.common import make_distributed_dataset
from orbit.utils.epoch_helper import EpochHelper
from orbit.utils.loop_fns import create_loop_fn
from orbit.utils.loop_fns import create_tf_while_loop_fn
from orbit.utils.loop_fns import create_tf_while_loop_fn_with_state
from orbit.utils.loop_fns import LoopFnWithSummaries
from orbit.utils.summary_manager import scalar_summary
from orbit.utils.summary_manager import SummaryManager
from orbit.utils.summary_manager_interface import SummaryManagerInterface
from orbit.utils.tpu_summaries import OptionalSummariesFunction
