"""Which core runs: the compiled twins (``_*.pyx``) or the pure-Python reference.

A few hot functions have a Cython twin in the same package as their pure module
(``header_binary.py`` + ``_header_binary.pyx``). The pure module asks :func:`load` for
its twin at import and takes the compiled functions when it gets one; callers never know
which runs. The pure modules stay the reference: the parity tests prove the twins give
the same results and raise the same errors on any input.

The twin is refused, and the pure code runs, when

* ``MQ_NO_EXTENSIONS`` is set to anything but ``""`` or ``0`` (as aiokafka's
  ``AIOKAFKA_NO_EXTENSIONS``): to test the pure core, or to rule the compiled one out;
* it was not built (no C compiler or no Cython at install time);
* it is stale: the ``.pyx`` beside it (a source checkout) is not the source it was
  compiled from. Each extension carries its source's sha256 (``SOURCE_STAMP``, baked in
  by ``hatch_build.py``); running code that no longer matches its source would make
  every edit of a ``.pyx`` a trap, so this warns (``run make``) and uses the pure twin.

:func:`summary` is what ``mq --version`` and the broker's runtime info print.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Final

__all__ = [
    "ENV_SWITCH",
    "EXTENSIONS",
    "CoreStatus",
    "check_stamp",
    "load",
    "source_digest",
    "status",
    "summary",
]

ENV_SWITCH: Final = "MQ_NO_EXTENSIONS"

EXTENSIONS: Final = (
    "mqcore.common._javahash",
    "mqcore.protocol._codec",
    "mqcore.protocol._header_binary",
    "mqcore.protocol._header_json",
    "mqcore.protocol.headers._reader",
    "mqcore.message._properties",
    "mqcore.message._record",
    "mqcore.store._batch_encoder",
    "mqcore.store._index_file",
)
"""Every compiled twin, by module name: what :func:`summary` reports on."""


@dataclass(frozen=True, slots=True)
class CoreStatus:
    name: str
    compiled: bool
    reason: str
    """Why the pure twin runs ("" when the compiled one does)."""


_STATUS: dict[str, CoreStatus] = {}
_MODULES: dict[str, ModuleType | None] = {}


def forced_pure() -> bool:
    """True when the environment switch asks for the pure core."""
    return os.environ.get(ENV_SWITCH, "") not in ("", "0")


def source_digest(source: Path) -> str:
    """The stamp a build of ``source`` carries: the sha256 of the ``.pyx`` followed by every
    ``.pxd`` under its top package (the shared inline code the twins cimport), in path
    order; ``hatch_build.source_stamp`` writes the same rule. Raises OSError."""
    digest = hashlib.sha256(source.read_bytes())
    for pxd in _shared_declarations(source.parent):
        digest.update(pxd.read_bytes())
    return digest.hexdigest()


def _shared_declarations(folder: Path) -> list[Path]:
    top = folder
    while (top.parent / "__init__.py").exists():
        top = top.parent
    found = _PXD.get(top)
    if found is None:
        found = _PXD[top] = sorted(top.rglob("*.pxd"))
    return found


_PXD: dict[Path, list[Path]] = {}
"""Top package folder -> its .pxd files (looked for once per process)."""


def check_stamp(module: ModuleType, source: Path | None = None) -> str:
    """Why ``module`` is stale ("" when it is not): its ``SOURCE_STAMP`` against
    :func:`source_digest` of ``source`` (by default the ``.pyx`` beside the module's
    file). No ``.pyx`` there (an installed wheel without sources) is not stale: nothing
    to compare with."""
    if source is None:
        file = getattr(module, "__file__", None)
        if not file:
            return ""
        source = Path(file).with_name(module.__name__.rpartition(".")[2] + ".pyx")
    try:
        digest = source_digest(source)
    except OSError:
        return ""
    stamp = getattr(module, "SOURCE_STAMP", "")
    if stamp == digest:
        return ""
    if not stamp:
        return f"built without a source stamp, {source.name} cannot be checked"
    return f"{source.name} (or a .pxd it shares) changed since it was compiled"


def load(name: str) -> ModuleType | None:
    """The compiled twin ``name`` (e.g. ``"mqcore.protocol._header_binary"``), or None
    when the pure one must run; the reason is kept for :func:`status`. A stale twin
    warns once (a :class:`RuntimeWarning`)."""
    if name in _MODULES:
        return _MODULES[name]
    module: ModuleType | None = None
    if forced_pure():
        reason = f"forced by {ENV_SWITCH}=1"
    else:
        try:
            module = importlib.import_module(name)
        except ImportError:
            reason = "not built"
        else:
            reason = check_stamp(module)
            if reason:
                module = None
                reason = f"stale: {reason}"
                warnings.warn(
                    f"mq: the compiled {name} is stale ({reason[7:]}); running the pure"
                    " twin. Run `make` (or pip install again) to rebuild it.",
                    RuntimeWarning,
                    stacklevel=3,
                )
    _MODULES[name] = module
    _STATUS[name] = CoreStatus(name, module is not None, reason)
    return module


def status() -> list[CoreStatus]:
    """Every twin's status (loading the ones not imported yet)."""
    for name in EXTENSIONS:
        load(name)
    return [_STATUS[name] for name in EXTENSIONS]


def summary() -> str:
    """One phrase: ``compiled``, ``pure (forced by MQ_NO_EXTENSIONS=1)``,
    ``pure (not built)``, ``pure (stale: ...)``, or ``mixed (...)`` naming the pure twins."""
    states = status()
    pure = [s for s in states if not s.compiled]
    if not pure:
        return "compiled"
    reasons = sorted({s.reason for s in pure})
    if len(pure) == len(states):
        return f"pure ({'; '.join(reasons)})"
    names = ", ".join(s.name.rpartition(".")[2] for s in pure)
    return f"mixed (pure: {names}: {'; '.join(reasons)})"
