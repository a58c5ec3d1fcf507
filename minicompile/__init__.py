"""minicompile: torch.compile's pipeline rebuilt from scratch in Python, for NumPy code.

Compile a NumPy function::

    import minicompile as mc

    @mc.compile
    def f(x):
        return np.tanh(x * 2 + 1).sum(axis=1)
"""
from . import ir
from .config import __version__  # noqa: F401  (minicompile.__version__)
from .aot import Tensor, grad, hessian, jacobian, no_grad, value_and_grad
from .api import compile, empty_cache, explain, reset
from .dynamo import ExplainOutput, GraphBreakError
from .profiler import profile
from .report import report  # the function; the package stays importable as minicompile.report.*

__all__ = ["compile", "explain", "reset", "empty_cache", "GraphBreakError", "ExplainOutput", "ir",
           "Tensor", "grad", "value_and_grad", "jacobian", "hessian", "no_grad", "profile", "report"]
