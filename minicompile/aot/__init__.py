"""Autograd for NumPy (our AOTAutograd + autograd): derivative rules, the eager tape, grad."""
from .derivatives import DERIVATIVES, NON_DIFFERENTIABLE, NonDifferentiable, derivative_rule
# (each registers its rules into DERIVATIVES)
from . import derivatives_indexing, derivatives_linalg, derivatives_shapes, derivatives_statistics  # noqa: F401
from .functional import grad, hessian, jacobian, value_and_grad
from .tensor import Tensor, no_grad

__all__ = ["DERIVATIVES", "NON_DIFFERENTIABLE", "NonDifferentiable", "Tensor", "derivative_rule", "grad",
           "hessian", "jacobian", "no_grad", "value_and_grad"]
