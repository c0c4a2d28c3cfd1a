"""A dict that notes which keys changed, so that writing a big table to disk costs what
changed since the last write instead of a walk over all of it (see
:class:`~mqcore.store.metadata.config_file.VersionedTableManager`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["TableChanges", "TrackedTable"]

V = TypeVar("V")


class TrackedTable(dict[str, V]):
    """A dict that notes the keys set or deleted since :meth:`take_changes`, so that a
    write of a big table knows what changed without comparing all of it.

    Reads are the dict's own (no Python code runs). Bulk changes (``update``, ``clear``,
    ``|=``) are not itemised: the next :meth:`take_changes` says ``reset``. Changes made
    through ``dict``'s methods called on the class (``dict.__setitem__(table, k, v)``)
    are not seen, nor are changes inside a value."""

    __slots__ = ("_changed", "_deleted", "_reset")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._changed: set[str] = set()
        self._deleted: set[str] = set()
        self._reset = True

    def take_changes(self) -> TableChanges:
        """What changed since the last call (the first call says ``reset``)."""
        changes = TableChanges(self._changed, self._deleted, self._reset)
        self._changed, self._deleted, self._reset = set(), set(), False
        return changes

    def __setitem__(self, key: str, value: V) -> None:
        super().__setitem__(key, value)
        self._changed.add(key)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self._changed.add(key)
        self._deleted.add(key)

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self:
            self._changed.add(key)
            self._deleted.add(key)
        return super().pop(key, *default)

    def popitem(self) -> tuple[str, V]:
        key, value = super().popitem()
        self._changed.add(key)
        self._deleted.add(key)
        return key, value

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self._changed.add(key)
        return super().setdefault(key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        self._reset = True

    def __ior__(self, other: Any) -> Any:  # type: ignore[misc]  # as typeshed's dict
        self.update(other)
        return self

    def clear(self) -> None:
        super().clear()
        self._reset = True


@dataclass(frozen=True, slots=True)
class TableChanges:
    """What :meth:`TrackedTable.take_changes` reports."""

    changed: set[str]
    """Keys set or deleted."""
    deleted: set[str]
    """Keys deleted (some may be back: at the end of the table now)."""
    reset: bool
    """Changed in bulk: compare everything."""
