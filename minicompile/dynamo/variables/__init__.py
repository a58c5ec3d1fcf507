"""The kinds of values the symbolic interpreter tracks, and what operations on them mean.

One module per kind, each with its variable class(es) and the code that
gives Python's operations on that kind their meaning in the trace:

* ``base``             — VariableTracker, constants, objects known by identity, NULL;
* ``containers``       — tuples, lists, dicts, iterators: methods, items, iteration;
* ``frame_containers`` — the caller's lists and dicts, read only as far as the trace reads them;
* ``arrays``           — ArrayVariable: operators, subscripts, attributes, in-place updates;
* ``functions``        — user functions: inlining, closures, functions made during the trace;
* ``user_objects``     — user objects (the caller's, or made by the trace), classes and modules:
  attribute reads, stores, deletions;
* ``user_classes``     — making objects, calling them, ``super()``, named tuples, dataclasses,
  ``with`` blocks, exceptions;
* ``numpy_calls``      — NumPy functions and array methods -> graph ops, and calls that mutate;
* ``builtins``         — Python's builtins and operators on any of these: the dispatch to the
  kind's module, and pure functions run on constants.

Each module imports only those above it in this list (``builtins`` is the
top), and the interpreter's own modules (output_graph.py, side_effects.py,
functionalization.py) import the classes they build from the module of their
kind.  Import from the modules themselves: this package re-exports nothing.
"""
