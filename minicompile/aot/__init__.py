"""Autograd for NumPy (our AOTAutograd + autograd): derivative rules, the eager tape, grad."""
from .derivatives import DERIVATIVES, NonDifferentiable, derivative_rule
from . import derivatives_indexing  # noqa: F401  (registers the rules of indexing and scan ops)
from .functional import grad, value_and_grad
from .tensor import Tensor, no_grad

__all__ = ["DERIVATIVES", "NonDifferentiable", "Tensor", "derivative_rule", "grad", "no_grad",
           "value_and_grad"]
