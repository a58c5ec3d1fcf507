"""Frame capture (our TorchDynamo): bytecode -> ir.Graph + guards."""
from .convert_frame import Capture, recording
from .eval_frame import OptimizedFunction, reset_all
from .exc import BreakReason, GraphBreakError, Unsupported
from .explain import ExplainOutput, explain

__all__ = ["BreakReason", "Capture", "ExplainOutput", "GraphBreakError", "OptimizedFunction",
           "Unsupported", "explain", "recording", "reset_all"]
