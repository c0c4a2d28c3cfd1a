"""Generated constructors for the frozen slotted dataclasses built once or more per request.

A frozen dataclass's ``__init__`` stores every field through ``object.__setattr__`` (it must
get past the class's own ``__setattr__``, which refuses), a C call per field. The builders
here fill a plain slotted *twin* of the class with ordinary slot stores instead and then make
it an instance of the frozen class by assigning ``__class__``, which Python allows between
classes of the same base and slots. The result is indistinguishable from ``cls(...)`` (the
classes here have no ``__post_init__``) at a third of the instructions.

The code is generated once per class, as :mod:`dataclasses` generates ``__init__`` itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["compile_function", "construct", "mutable_twin", "positional_builder"]

T = TypeVar("T")

_TWINS: dict[type, type | None] = {}


def mutable_twin(cls: type) -> type | None:
    """A plain class with ``cls``'s base and slots (fill one, then set ``__class__ = cls``),
    or None where Python does not allow that: not a slotted dataclass, a ``__post_init__``
    to run, or a class compiled by mypyc (whose own ``__init__`` is fast anyway)."""
    if cls in _TWINS:
        return _TWINS[cls]
    twin = None
    slots = cls.__dict__.get("__slots__")
    if dataclasses.is_dataclass(cls) and slots is not None and not hasattr(cls, "__post_init__"):
        candidate = type(f"_Mutable{cls.__name__}", cls.__bases__, {"__slots__": slots})
        probe: Any = object.__new__(candidate)
        try:
            probe.__class__ = cls
            twin = candidate
        except TypeError:  # layouts differ
            pass
    _TWINS[cls] = twin
    return twin


def construct(cls: type, values: dict[str, str], namespace: dict[str, Any]) -> list[str]:
    """Generated lines that return a ``cls`` whose attributes are the given expressions:
    through its twin when it has one, else through ``cls(...)``. Adds to ``namespace`` names
    that start with ``_`` (generated locals start with ``v_``, so never shadow them)."""
    twin = mutable_twin(cls)
    namespace["_cls"] = cls
    if twin is None:
        return ["return _cls(" + ", ".join(f"{a}={e}" for a, e in values.items()) + ")"]
    namespace["_new"] = object.__new__
    namespace["_Twin"] = twin
    stores = [f"obj.{attr} = {expr}" for attr, expr in values.items()]
    return ["obj = _new(_Twin)", *stores, "obj.__class__ = _cls", "return obj"]


def compile_function(
    name: str, params: str, body: list[str], namespace: dict[str, Any]
) -> Callable[..., Any]:
    """``def name(params): body`` compiled with ``namespace`` as its globals."""
    source = f"def {name}({params}):\n" + "\n".join(f"    {line}" for line in body)
    scope = dict(namespace)
    exec(compile(source, f"<generated {name}>", "exec"), scope)
    function: Callable[..., Any] = scope[name]
    return function


def positional_builder(cls: type[T]) -> Callable[..., T]:
    """``cls(*fields)`` in field order, every field given, without the frozen ``__init__``
    (``cls`` itself where it has no twin)."""
    if mutable_twin(cls) is None:
        return cls
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    namespace: dict[str, Any] = {}
    body = construct(cls, {name: f"v_{name}" for name in names}, namespace)
    params = ", ".join(f"v_{name}" for name in names)
    return compile_function(f"build_{cls.__name__}", params, body, namespace)
