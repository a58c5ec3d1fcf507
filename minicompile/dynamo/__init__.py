"""Frame capture (our TorchDynamo): bytecode -> ir.Graph + guards."""
from .eval_frame import OptimizedFunction, reset_all
from .exc import BreakReason, GraphBreakError, Unsupported
from .explain import ExplainOutput, explain

__all__ = ["BreakReason", "ExplainOutput", "GraphBreakError", "OptimizedFunction",
           "Unsupported", "explain", "reset_all"]
