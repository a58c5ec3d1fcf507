"""Argument binding at CPython speed: a generated function with the callee's signature.

``make_binder(fn)(*args, **kwargs)`` returns the dict of ``fn``'s parameters
that CPython itself would bind (defaults, keywords, ``*args``, ``**kwargs``),
raising the same TypeError for a bad call.  Used on every compiled call (to
build ``L``) and when inlining a call during a trace.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable


def make_binder(fn: Any) -> Callable[..., dict[str, Any]]:
    """A function with ``fn``'s signature that returns its arguments as a dict.

    CPython binds the arguments itself (defaults, keywords, ``*args``), which is
    an order of magnitude faster than ``inspect.Signature.bind``.
    """
    code = fn.__code__
    n_pos, n_kwonly = code.co_argcount, code.co_kwonlyargcount
    names = list(code.co_varnames[: n_pos + n_kwonly])
    varargs, varkw = varargs_names(code)
    # Compiler-made parameters (".0", the iterator of a 3.11 comprehension) are
    # not identifiers: bind them positionally under a stand-in name.
    n_posonly = code.co_posonlyargcount
    while n_posonly < n_pos and not names[n_posonly].isidentifier():
        n_posonly += 1
    spelled = {n: (n if n.isidentifier() else f"_arg{i}") for i, n in enumerate(names)}

    params = [spelled[n] for n in names[:n_posonly]] + (["/"] if n_posonly else [])
    params += names[n_posonly: n_pos]
    if varargs:
        params.append("*" + varargs)
    elif n_kwonly:
        params.append("*")
    params += names[n_pos:]
    if varkw:
        params.append("**" + varkw)
    all_names = names + [n for n in (varargs, varkw) if n]
    body = ", ".join(f"{n!r}: {spelled.get(n, n)}" for n in all_names)
    src = f"def bind({', '.join(params)}):\n    return {{{body}}}"
    namespace: dict[str, Any] = {}
    exec(compile(src, "<minicompile binder>", "exec"), namespace)
    binder = namespace["bind"]
    binder.__defaults__ = fn.__defaults__
    binder.__kwdefaults__ = fn.__kwdefaults__
    return binder


def varargs_names(code) -> tuple[str | None, str | None]:
    """The names of ``*args`` and ``**kwargs`` in a code object, or None."""
    extra = code.co_argcount + code.co_kwonlyargcount
    has_varargs = bool(code.co_flags & inspect.CO_VARARGS)
    varargs = code.co_varnames[extra] if has_varargs else None
    varkw = code.co_varnames[extra + has_varargs] if code.co_flags & inspect.CO_VARKEYWORDS else None
    return varargs, varkw
