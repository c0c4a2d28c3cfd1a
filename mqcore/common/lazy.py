"""Lazy re-exports for packages that gather the names of their submodules.

``from mqcore.protocol.headers import SendMessageRequestHeader`` is convenient, but
building every header and body dataclass up front costs a one-shot command (``mq
produce``) a fifth of its CPU. A package installs the hooks below instead of star-importing
its submodules: a name is looked up in the submodules in the order given, importing only
as many as it takes (put the ones hot paths use first). Type checkers still see the star
imports, kept under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

__all__ = ["lazy_names", "lazy_reexports"]


def lazy_reexports(
    namespace: dict[str, Any], submodules: Sequence[str], *, eager: Sequence[str] = ()
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Return a module's ``__getattr__`` and ``__dir__`` (PEP 562) over *submodules*.

    Each submodule lists what it exports in ``__all__``; the package's own ``__all__``
    (asked for by ``from package import *``) is *eager* (the names the package defines
    or imports itself) followed by every submodule's, which imports them all.
    """
    package: str = namespace["__name__"]
    own = list(eager)

    def load(sub: str) -> ModuleType:
        return importlib.import_module(f"{package}.{sub}")

    def all_names() -> list[str]:
        return [*own, *(name for sub in submodules for name in load(sub).__all__)]

    def __getattr__(name: str) -> object:
        if name == "__all__":
            names = all_names()
            namespace["__all__"] = names
            return names
        if not name.startswith("__"):
            for sub in submodules:
                module = load(sub)
                if name in module.__all__:
                    value = getattr(module, name)
                    namespace[name] = value
                    return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*namespace, *all_names()})

    return __getattr__, __dir__


def lazy_names(
    namespace: dict[str, Any], homes: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Return a module's ``__getattr__`` and ``__dir__`` (PEP 562) over *homes*, a map of
    exported name -> the module that defines it (a submodule of the package when the
    module name has no dot), for packages that export a chosen few of their submodules'
    names and keep ``__all__`` themselves."""
    package: str = namespace["__name__"]

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = home if "." in home else f"{package}.{home}"
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
