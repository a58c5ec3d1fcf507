"""The one switch compiled code reads: which profile (if any) is recording.

Kept apart from the rest of the profiler so that ``dynamo`` can read it
without importing anything: with no profile running, a compiled call pays one
global read and one ``is None`` test, nothing more.
"""
from __future__ import annotations

from typing import Any

active: Any = None  # the running minicompile.profiler.Profile, or None
