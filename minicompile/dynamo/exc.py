"""Why capture stopped: graph breaks and the error ``fullgraph=True`` raises."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BreakReason:
    """One graph break: what could not be traced, and where in the user's code."""

    reason: str
    filename: str
    lineno: int | None
    numpy_error: bool = False  # eager execution raises here too
    # The user's frames from the compiled function down to the line that broke,
    # outermost first ("file:line in function"), when the break is in a callee.
    user_stack: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = f"{self.reason} ({self.filename}:{self.lineno})"
        if len(self.user_stack) > 1:
            text += "\n    user stack:\n" + "\n".join(f"      {frame}" for frame in self.user_stack)
        return text


class Unsupported(Exception):
    """Raised inside the symbolic interpreter for anything it cannot trace.

    The interpreter attaches the user's source line when it catches it, so
    raising code only has to say *what* is unsupported.
    """

    def __init__(self, reason: str, numpy_error: bool = False, resumable: bool = True):
        super().__init__(reason)
        self.reason = reason
        # True when the program itself is wrong (NumPy or Python would raise
        # here too), as opposed to minicompile not following it.
        self.numpy_error = numpy_error
        # False when running the rest of the frame in CPython after a graph
        # break could still differ from eager NumPy: the whole frame runs as Python.
        self.resumable = resumable


class GraphBreakError(RuntimeError):
    """Raised under ``fullgraph=True`` where capture would otherwise break."""

    def __init__(self, why: BreakReason):
        super().__init__(f"graph break under fullgraph=True: {why}")
        self.reason = why


class NotResumable(Exception):
    """A graph break after which the frame cannot be resumed (it then runs eagerly)."""


class GraphRaised(Exception):
    """The compiled graph raised (``.error``).  The graph is pure and runs before
    anything is written back, so nothing the caller sees has changed yet: the
    frame then runs as Python, where NumPy raises its own error after exactly
    the writes eager execution makes first."""

    def __init__(self, error: BaseException):
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error


class RestartAnalysis(BaseException):
    """A loop's body could not become one loop node (loop_capture.py): trace the
    frame again from its start with that loop unrolled.  A BaseException, so that
    no handler of the program's own errors on the way up takes it."""

    def __init__(self, key: tuple, reason: str, peel: bool = False, carry: tuple[str, ...] = (),
                 attributes: tuple[str, ...] = ()):
        super().__init__(reason)
        self.key = key
        self.reason = reason
        # Try again with these carried by the loop: locals holding Python floats that
        # change (t += dt), and attributes of the caller's objects the body sets (self.u = ...)
        self.carry = carry
        self.attributes = attributes
        # True: run the first iteration unrolled, then try the rest as one node
        # (a value that becomes an array in the first iteration: total = 0; total = total + x)
        self.peel = peel
