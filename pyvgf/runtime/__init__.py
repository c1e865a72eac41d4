"""Load a VGF and run it: `load()` -> `Model`, `Model.run(inputs)` -> outputs."""

from .model import Model, TensorInfo, load
from .schedule import Execution, Schedule

__all__ = ["Execution", "Model", "Schedule", "TensorInfo", "load"]
