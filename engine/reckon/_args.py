"""Argument checks of public calls: a missing or unknown argument raises
:class:`~reckon._errors.InvalidInput` naming it and the arguments the call accepts
(every public call raises a ``ReckonError``), not a bare ``TypeError``.

:func:`arguments_checked` wraps one function; :func:`checked_methods` wraps every public
method of a class (the service classes handed out by the ``Tenant`` facade). The check is
``inspect.Signature.bind`` before the call (about 3 µs); a ``TypeError`` raised inside
the call is not touched.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from reckon._errors import InvalidInput

__all__ = ["arguments_checked", "checked_methods"]

_P = ParamSpec("_P")
_R = TypeVar("_R")
_T = TypeVar("_T", bound=type)


def _accepted(sig: inspect.Signature) -> str:
    names = []
    for p in sig.parameters.values():
        if p.name in ("self", "cls"):
            continue
        if p.kind is p.VAR_POSITIONAL:
            names.append(f"*{p.name}")
        elif p.kind is p.VAR_KEYWORD:
            names.append(f"**{p.name}")
        elif p.kind is p.KEYWORD_ONLY:
            names.append(f"{p.name}=")
        else:
            names.append(p.name)
    return ", ".join(names) or "no arguments"


def bind_error(fn: Callable[..., Any], sig: inspect.Signature, exc: TypeError, hint: str = "",
               kwargs: dict[str, Any] | None = None) -> InvalidInput:
    """The :class:`InvalidInput` for a ``TypeError`` of ``sig.bind``: names the argument
    (``field``), what the call accepts and, when given, a ``hint``."""
    name = getattr(fn, "__name__", "call")
    params = sig.parameters
    unknown = [k for k in kwargs or () if k not in params or params[k].kind is inspect.Parameter.POSITIONAL_ONLY]
    if unknown and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        text = f"unknown argument {unknown[0]!r}"  # before a missing one: it is often the misspelt one
        field: str | None = unknown[0]
    else:
        m = re.search(r"'(\w+)'", str(exc))
        field = m.group(1) if m else None
        text = str(exc).removeprefix("got an ").replace("missing a required argument", "missing required argument")
    return InvalidInput(f"{name}(): {text}; {name}() takes {_accepted(sig)}{'; ' + hint if hint else ''}",
                        field=field)


def arguments_checked(fn: Callable[_P, _R], hint: str = "") -> Callable[_P, _R]:
    """``fn`` whose missing or unknown argument raises :class:`InvalidInput` naming it and
    the accepted ones (and ``hint``); the signature and types stay ``fn``'s own."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise bind_error(fn, sig, exc, hint, kwargs) from None
        return fn(*args, **kwargs)

    return checked


def checked_methods(cls: _T) -> _T:
    """Class decorator: every public plain method defined in ``cls`` (not properties,
    class or static methods, not names starting with ``_``) is :func:`arguments_checked`,
    with the hint the class's ``_ARGUMENT_HINTS`` (method name -> text) gives it."""
    hints: dict[str, str] = getattr(cls, "_ARGUMENT_HINTS", {})
    for name, attr in list(vars(cls).items()):
        if name.startswith("_") or not inspect.isfunction(attr):
            continue
        setattr(cls, name, arguments_checked(attr, hints.get(name, "")))
    return cls
