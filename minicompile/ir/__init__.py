"""The graph IR (our torch.fx + fake tensors): nodes, the op registry, passes."""
from .dtypes import SUPPORTED, UnsupportedDtype, check_supported, short_name
from .graph import Graph, Node, SourceLine, format_call
from .ops import OPS, OpDef, TensorMeta, UnknownOp, get_op, register
from .passes import dead_code_elimination

__all__ = [
    "Graph", "Node", "OpDef", "OPS", "SourceLine", "SUPPORTED", "TensorMeta", "UnknownOp",
    "UnsupportedDtype", "check_supported", "dead_code_elimination", "format_call",
    "get_op", "register", "short_name",
]
