"""Saving UPDATE_BROKER_CONFIG's changes in the broker's config file.

RocketMQ 4.9.8 (``Configuration.update`` -> ``persist`` -> ``MixAll.string2File``) writes
the new text to ``<file>.tmp``, copies the old content to ``<file>.bak``, then replaces
the file; the next start reads the new values. It writes every key of its config
objects; here only the changed keys are rewritten in place (or appended) and every other
line, comments included, stays. A full dump would pin values a start decides itself:
the ephemeral port of ``--listen HOST:0``, a detected ``brokerIP1``, the ``--store``
flag's directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["save_properties", "updated_properties_text"]

_KEY = re.compile(r"\s*([^=:\s#!]+)")


def updated_properties_text(old: str, changes: Mapping[str, str]) -> str:
    """``old`` with each changed key's line replaced (the last one if a key repeats, as
    it is the one in effect) and the keys it lacked appended."""
    lines = old.splitlines()
    last: dict[str, int] = {}
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if not stripped or stripped[0] in "#!":
            continue
        m = _KEY.match(line)
        if m and m.group(1) in changes:
            last[m.group(1)] = i
    for key, index in last.items():
        lines[index] = f"{key}={changes[key]}"
    lines.extend(f"{key}={value}" for key, value in changes.items() if key not in last)
    return "".join(line + "\n" for line in lines)


def save_properties(path: Path, changes: Mapping[str, str]) -> None:
    """Apply ``changes`` to the properties file at ``path`` the way 4.9.8 persists:
    ``.tmp`` written, previous content kept in ``.bak``, then the swap. OSError if the
    file cannot be written."""
    try:
        old: str | None = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(updated_properties_text(old or "", changes), encoding="utf-8")
    if old is not None:
        path.with_name(path.name + ".bak").write_text(old, encoding="utf-8")
    os.replace(tmp, path)
