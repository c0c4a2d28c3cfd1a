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

__all__ = ["compile_function", "mutable_twin", "positional_builder"]

T = TypeVar("T")

_TWINS: dict[type, type] = {}


def mutable_twin(cls: type) -> type:
    """A plain class with ``cls``'s base and slots: fill one, then set ``__class__ = cls``."""
    twin = _TWINS.get(cls)
    if twin is None:
        slots = cls.__dict__.get("__slots__")
        if not dataclasses.is_dataclass(cls) or slots is None:
            raise TypeError(f"{cls.__name__} is not a slotted dataclass")
        if hasattr(cls, "__post_init__"):
            raise TypeError(f"{cls.__name__} has a __post_init__ a builder would skip")
        twin = type(f"_Mutable{cls.__name__}", cls.__bases__, {"__slots__": slots})
        _TWINS[cls] = twin
    return twin


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
    """``cls(*fields)`` in field order, every field given, without the frozen ``__init__``."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    args = [f"_{name}" for name in names]
    body = ["obj = _new(_Twin)"]
    body += [f"obj.{name} = {arg}" for name, arg in zip(names, args, strict=True)]
    body += ["obj.__class__ = _cls", "return obj"]
    namespace = {"_new": object.__new__, "_Twin": mutable_twin(cls), "_cls": cls}
    return compile_function(f"build_{cls.__name__}", ", ".join(args), body, namespace)
