"""Remote address patterns of ``globalWhiteRemoteAddresses`` and ``whiteRemoteAddress``.

The forms 4.9.8 accepts: ``*`` (also ``*.*.*.*`` and the IPv6 spelling) for any host,
one address (IPv4 or IPv6), a list ``a,b,c``, a set in the last part ``192.168.0.{1,2}``,
and a range or wildcard in one part ``192.168.1-10.*`` / ``10.10.*.*`` /
``1050::5:600:300c:1-ff``. The first ranged part decides: the parts before it must be
equal, the ranged part must fall in the range, later parts are not compared (4.9.8 reads
them the same way). An empty pattern matches nothing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass

from mqcore.errors import ConfigError

__all__ = ["AddressPattern", "normalize_host"]


def normalize_host(host: str) -> str | None:
    """The canonical text of an IP address (IPv6 fully expanded), or None if not one."""
    try:
        ip = ipaddress.ip_address(host.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped
        return str(mapped) if mapped is not None else ip.exploded
    return str(ip)


@dataclass(frozen=True, slots=True)
class AddressPattern:
    """One parsed pattern; ``matches(host)`` takes the peer's IP text."""

    text: str
    _match: Callable[[str], bool]

    @classmethod
    def parse(cls, text: object) -> AddressPattern:
        """Raises ConfigError for a pattern 4.9.8 would refuse too."""
        raw = "" if text is None else str(text).strip()
        return cls(raw, _compile(raw))

    def matches(self, host: str) -> bool:
        return self._match(host)


def _compile(raw: str) -> Callable[[str], bool]:
    if not raw:
        return lambda host: False
    if raw in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return lambda host: True
    if raw.endswith("}"):
        head, brace, tail = raw.rpartition("{")
        if not brace or (head and head[-1] not in ".:"):
            raise ConfigError(f"bad address set {raw!r}: use e.g. 192.168.0.{{1,2}}")
        return _one_of([head + part.strip() for part in tail[:-1].split(",") if part.strip()])
    if "," in raw:
        return _one_of([part.strip() for part in raw.split(",") if part.strip()])
    if "*" in raw or "-" in raw:
        return _range_v6(raw) if ":" in raw else _range_v4(raw)
    canonical = normalize_host(raw)
    if canonical is None:
        raise ConfigError(f"not an IP address: {raw!r}")
    return lambda host: normalize_host(host) == canonical


def _one_of(addresses: list[str]) -> Callable[[str], bool]:
    wanted = set()
    for address in addresses:
        canonical = normalize_host(address)
        if canonical is None:
            raise ConfigError(f"not an IP address: {address!r}")
        wanted.add(canonical)
    return lambda host: normalize_host(host) in wanted


def _bounds(part: str, raw: str, base: int, top: int) -> tuple[int, int] | None:
    """(low, high) of a ``*`` or ``a-b`` part; None for a plain part."""
    if part == "*":
        return 0, top
    if "-" not in part:
        return None
    low_text, _, high_text = part.partition("-")
    try:
        low, high = int(low_text, base), int(high_text, base)
    except ValueError:
        raise ConfigError(f"bad range {part!r} in address pattern {raw!r}") from None
    if not 0 <= low <= high <= top:
        raise ConfigError(f"bad range {part!r} in address pattern {raw!r}")
    return low, high


def _range_v4(raw: str) -> Callable[[str], bool]:
    parts = [p.strip() for p in raw.split(".")]
    if len(parts) != 4:
        raise ConfigError(f"bad IPv4 pattern {raw!r}: it needs four parts")
    for index in (1, 2, 3):
        bounds = _bounds(parts[index], raw, 10, 255)
        if bounds is not None:
            break
    else:
        raise ConfigError(f"bad IPv4 pattern {raw!r}: the first part cannot be a range")
    head = parts[:index]
    if not all(p.isdigit() and int(p) <= 255 for p in head):
        raise ConfigError(f"bad IPv4 pattern {raw!r}")
    low, high = bounds

    def match(host: str) -> bool:
        got = host.split(".")
        if len(got) != 4 or normalize_host(host) != host or got[:index] != head:
            return False
        return low <= int(got[index]) <= high

    return match


def _expand(head: str, groups: int) -> list[str] | None:
    """``head`` (IPv6 text, maybe with ``::``) as ``groups`` 4-digit upper-case groups."""
    if "::" in head:
        left, _, right = head.partition("::")
        lparts = left.split(":") if left else []
        rparts = right.split(":") if right else []
        fill = groups - len(lparts) - len(rparts)
        if fill < 0:
            return None
        parts = [*lparts, *(["0"] * fill), *rparts]
    else:
        parts = head.split(":") if head else []
    if len(parts) != groups:
        return None
    try:
        return [f"{int(p, 16):04X}" for p in parts if int(p, 16) <= 0xFFFF]
    except ValueError:
        return None


def _range_v6(raw: str) -> Callable[[str], bool]:
    # Find the first ranged group, scanning the text so that "::" stays in the head.
    pieces = raw.split(":")
    for index, piece in enumerate(pieces):
        bounds = _bounds(piece.strip(), raw, 16, 0xFFFF) if index else None
        if bounds is not None:
            break
    else:
        raise ConfigError(f"bad IPv6 pattern {raw!r}")
    head_text = ":".join(pieces[:index])
    # The ranged group sits where the head ends once "::" is expanded; the groups after
    # it (wildcards or more ranges) count for the expansion, as in 4.9.8.
    position = 8 - (len(pieces) - index)
    head = _expand(head_text, position)
    if head is None or len(head) != position:
        raise ConfigError(f"bad IPv6 pattern {raw!r}")
    low, high = bounds

    def match(host: str) -> bool:
        canonical = normalize_host(host)
        if canonical is None or ":" not in canonical:
            return False
        groups = canonical.upper().split(":")
        return groups[:position] == head and low <= int(groups[position], 16) <= high

    return match
