"""The kinds of values the symbolic interpreter tracks, and what operations on them mean."""
from .base import (
    NULL,
    ArrayVariable,
    CellVariable,
    ConstantVariable,
    DictVariable,
    IteratorVariable,
    ListVariable,
    MethodVariable,
    PythonObjectVariable,
    TupleVariable,
    UserFunctionVariable,
    UserObjectVariable,
    VariableTracker,
)
