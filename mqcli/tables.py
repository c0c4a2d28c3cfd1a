"""Rich table builders and cell formats shared by the admin commands and the store tools.

One look everywhere, after rpk: UPPER-KEBAB headers, ``-`` for "not applicable / not
known", numbers right-aligned, and the row count in the title so a cut-off screen still
says how much there was. The delay-level table lives here because ``mq store inspect``
(offline, from ``config/delayOffset.json``) and ``mq broker status`` (live, from
``scheduleMessageOffset_<level>``) show the same thing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import typer
from rich.cells import cell_len
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from mqcli.output import console, err_console, fail
from mqcli.render import fmt_ts

__all__ = [
    "OUTPUT_FORMATS",
    "PLAIN",
    "DelayRow",
    "FittedTable",
    "FormatOpt",
    "cell",
    "delay_table",
    "fmt_age",
    "fmt_bytes",
    "fmt_delay",
    "fmt_perm",
    "fmt_rate",
    "make_table",
    "note",
    "parse_perm",
    "plain_lines",
    "print_table",
    "resolve_format",
    "rows_table",
]

OUTPUT_FORMATS = ("table", "wide", "json")
FormatOpt: Any = typer.Option(
    None,
    "--format",
    "-o",
    metavar="FORMAT",
    show_default=False,
    help="table (fitted to the terminal), wide (every column, nothing cut) or json; "
    "--json is short for --format json. Default: table on a terminal, plain columns "
    "(whole values, no title) in a pipe.",
)
"""``-o/--format`` of every read command; resolve it with :func:`resolve_format`."""

PLAIN = "plain"
"""What :func:`resolve_format` answers when no format was asked for and stdout is not a
terminal: header and rows as space-aligned plain columns, every value whole."""


def resolve_format(fmt: str | None, as_json: bool) -> str:
    """The output format from ``--format`` and ``--json``: table, wide, json, or
    :data:`PLAIN` when nothing was asked for and stdout is a pipe or a file."""
    if fmt is None:
        if as_json:
            return "json"
        return "table" if console.is_terminal else PLAIN
    chosen = fmt.strip().lower()
    if chosen not in OUTPUT_FORMATS:
        fail(f"unknown --format {fmt!r}", hint=f"use one of {', '.join(OUTPUT_FORMATS)}")
    if as_json and chosen != "json":
        fail(f"--json and --format {chosen} disagree", hint="give one of them")
    return chosen


def print_table(table: Table, fmt: str | None = None, *, section: bool = False) -> None:
    """Print ``table`` in ``fmt`` (None: as :func:`resolve_format` would choose).

    ``table``: fitted to the terminal (see :func:`_fit`): the least important columns are
    hidden first, free text wraps, nothing else is cut.
    ``wide``: every cell whole on one line, the table as wide as it needs to be.
    :data:`PLAIN`: the title on stderr, header and rows on stdout as plain columns; a
    ``section`` of a longer report keeps its title on stdout, where it names the rows."""
    if fmt is None:
        fmt = "table" if console.is_terminal else PLAIN
    if fmt == PLAIN:
        if table.title and section:
            console.out(_text(table.title), highlight=False)
        elif table.title:
            note(str(table.title))
        for line in plain_lines(table):
            console.out(line, highlight=False)
        return
    if fmt != "wide":
        hidden = _fit(table, console.width)
        console.print(table)
        if hidden:
            note(f"{', '.join(hidden)} hidden to fit: -o wide shows every column")
        return
    for column in table.columns:
        column.no_wrap = True
    needed = console.measure(table, options=console.options.update_width(1_000_000)).maximum
    wide = Console(
        file=console.file,
        width=max(needed, console.width),
        highlight=False,
        force_terminal=console.is_terminal,
        color_system=console.color_system or None,  # type: ignore[arg-type]
    )
    wide.print(table)


def note(text: str) -> None:
    """A remark beside a table (a summary, a hint): dim on a terminal; on stderr when
    stdout is a pipe, so what a script reads is the table alone."""
    if console.is_terminal:
        console.print(f"[dim]{text}[/]")
    else:
        err_console.print(text, highlight=False)


def _text(value: object) -> str:
    """A cell as plain text: markup and styles dropped, one line."""
    if isinstance(value, Text):
        plain = value.plain
    elif isinstance(value, str):
        plain = Text.from_markup(value).plain
    else:
        plain = str(value)
    return plain.replace("\n", " ").replace("\t", " ")


def plain_lines(table: Table, *, header: bool = True) -> list[str]:
    """The table as kubectl and rpk print it off a terminal: an UPPER-KEBAB header and one
    line per row, columns two spaces apart, nothing cut or wrapped (``header=False`` for
    a grid of name/value rows)."""
    columns = [[_text(c.header)] * header + [_text(v) for v in c.cells] for c in table.columns]
    if not columns:
        return []
    widths = [max(len(v) for v in col) for col in columns]
    lines = []
    for row in zip(*columns, strict=True):
        cells = [v.ljust(w) for v, w in zip(row, widths, strict=True)]
        lines.append("  ".join(cells).rstrip())
    return lines


class FittedTable(Table):
    """A table that says which columns a narrow terminal may hide (:func:`make_table`)."""

    def __init__(self, *args: Any, drop: Sequence[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.drop = None if drop is None else tuple(drop)
        """Headers of the columns that may be hidden, the first hidden first; None: every
        column but the first, from the right."""


def _drop_order(table: Table) -> list[str]:
    declared = getattr(table, "drop", None)
    headers = [_text(c.header) for c in table.columns]
    if declared is None:
        return headers[:0:-1]
    return [h for h in declared if h in headers]


def _overhead(table: Table, count: int) -> int:
    """Cells of a ``count``-column table that are not content: padding and borders."""
    if count == 0:
        return 0
    _, right, _, left = table.padding  # rich keeps it as (top, right, bottom, left)
    pad = (left + right) * count - (0 if table.pad_edge else left + right)
    lines = (count - 1 + (2 if table.show_edge else 0)) if table.box is not None else 0
    return pad + lines


def _header_lines(column: Column, broken: bool) -> list[str]:
    """The header, broken at its hyphens when ``broken`` and it is wider than the values."""
    header = _text(column.header)
    longest = max((cell_len(_text(v)) for v in column.cells), default=0)
    if broken and cell_len(header) > longest and header not in _WRAPPING_COLUMNS:
        return header.replace("-", "-\n").split("\n")
    return [header]


def _needs(table: Table, *, broken: bool) -> list[int]:
    """Each column's narrowest width that cuts nothing: a whole column its longest value
    (and header); a wrapping one its longest word, at least 10 or all of it."""
    out = []
    for column in table.columns:
        header = _text(column.header)
        values = [_text(v) for v in column.cells]
        head = max(cell_len(p) for p in _header_lines(column, broken))
        longest = max((cell_len(v) for v in values), default=0)
        if header in _WRAPPING_COLUMNS:
            word = max((cell_len(w) for v in values for w in v.split()), default=0)
            out.append(max(head, min(longest, max(10, word))))
        else:
            out.append(max(head, longest))
    return out


def _fit(table: Table, width: int) -> list[str]:
    """Make ``table`` fit ``width`` without cutting a value: long headers break at their
    hyphens (``BROKER-`` over ``OFFSET``), then the columns the table lets go are hidden,
    least important first, until the rest fits whole; free text (bodies, descriptions)
    wraps. Names, ids, addresses, roles, versions, times and numbers are never cut: if
    even the columns that stay do not fit, they wrap onto a second line rather than end
    in "…". Returns the headers of the hidden columns."""
    hidden: list[str] = []
    order = _drop_order(table)
    broken = False
    while True:
        needs = _needs(table, broken=broken)
        if sum(needs) + _overhead(table, len(needs)) <= width:
            break
        if not broken:
            broken = True
            continue
        if not order:
            break
        name = order.pop(0)
        index = [_text(c.header) for c in table.columns].index(name)
        del table.columns[index]
        for i, column in enumerate(table.columns):
            column._index = i
        hidden.append(name)
    fits = sum(_needs(table, broken=broken)) + _overhead(table, len(table.columns)) <= width
    for column, least in zip(table.columns, _needs(table, broken=broken), strict=True):
        header = _text(column.header)
        if header in _WRAPPING_COLUMNS:
            column.no_wrap, column.overflow = False, "fold"
            continue
        column.header = "\n".join(_header_lines(column, broken))
        # whole: never "…"; when even the kept columns cannot fit, fold rather than cut
        column.no_wrap, column.overflow = fits, "fold"
        column.min_width = least if fits else None
    return hidden


# Free-text columns: the only ones a fitted table wraps (every other value is a name, an
# id, an address, a role, a version, a time or a number, and stays whole on one line).
_WRAPPING_COLUMNS = frozenset(
    {
        "DESCRIPTION",
        "BODY",
        "PROPERTIES",
        "EXPRESSION",
        "KEYS",
        "TAGS",
        "VALUE",
        "DETAIL",
        "HA",
        "TOPICS",
        "GROUPS",
        "WHITE-ADDRESS",
        "TOPIC-DEFAULT",
        "GROUP-DEFAULT",
        "SUBSCRIPTIONS",
        "ERROR",
    }
)


# Columns whose values are text, so they stay left-aligned; all others are numbers.
_TEXT_COLUMNS = frozenset(
    {
        "TOPIC",
        "GROUP",
        "NAME",
        "FILE",
        "BROKER",
        "BROKERS",
        "CLUSTER",
        "ADDRESS",
        "ADDR",
        "KIND",
        "PERM",
        "VERSION",
        "CLIENT-ID",
        "LANGUAGE",
        "EXPRESSION",
        "TYPE",
        "MSG-ID",
        "ORIGIN-TOPIC",
        "ORIGIN-MSG-ID",
        "TAGS",
        "KEYS",
        "BODY",
        "SLAVES",
        "ORDER",
        "BROADCAST",
        "CONSUME",
        "KEY",
        "VALUE",
        "ROLE",
        "HA",
        "IN-SYNC",
        "CURRENT",
        "NAMESRV",
        "DESCRIPTION",
        "ACCESS-KEY",
        "SECRET",
        "ADMIN",
        "WHITE-ADDRESS",
        "TOPIC-DEFAULT",
        "GROUP-DEFAULT",
        "TOPICS",
        "GROUPS",
        "LOCKED",
        "EFFECT",
        "OLD-VALUE",
        "NEW-VALUE",
    }
)


_TEXT_SUFFIXES = ("-ID", "TIME", "-AT", "DUE", "STORED", "UPDATED", "CONSUMED", "HEARTBEAT")


def make_table(
    title: str, *columns: str, count: int | None = None, drop: Sequence[str] | None = None
) -> Table:
    """A table with ``columns`` (UPPER-KEBAB) and ``title``, plus `` · N rows`` when
    ``count`` is given. ``drop`` are the columns a terminal too narrow for all of them may
    hide, the least important first (as kubectl and rpk leave columns to ``-o wide``);
    columns not named stay. By default every column but the first may go, from the right."""
    if count is not None:
        title = f"{title} · {count} {'row' if count == 1 else 'rows'}"
    table = FittedTable(
        title=title, title_justify="left", title_style="bold", header_style="cyan", drop=drop
    )
    for col in columns:
        text = col in _TEXT_COLUMNS or col.endswith(_TEXT_SUFFIXES)
        table.add_column(col, justify="left" if text else "right", no_wrap=col in ("TOPIC",))
    return table


Row = dict[str, Any]


def rows_table(
    title: str,
    columns: Mapping[str, Callable[[Row], str]],
    rows: Sequence[Row],
    *,
    drop: Sequence[str] | None = None,
) -> Table:
    """:func:`make_table` filled from the rows a command also prints as JSON: each column
    is its header and how to show a row's value, side by side, so they cannot drift."""
    table = make_table(title, *columns, count=len(rows), drop=drop)
    for row in rows:
        table.add_row(*(show(row) for show in columns.values()))
    return table


def cell(value: object) -> str:
    """``-`` for None / empty, the value as text otherwise."""
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def fmt_delay(ms: int) -> str:
    """A delay as RocketMQ's ``messageDelayLevel`` spells it (``10s``, ``2m``, ``1h``)."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def fmt_age(ms: int | None) -> str:
    """A duration for humans: ``0s``, ``4.2s``, ``3m12s``, ``2h05m``, ``3d04h``."""
    if ms is None:
        return "-"
    ms = max(0, ms)
    if ms < 60_000:
        return f"{ms / 1000:.1f}s" if ms % 1000 else f"{ms // 1000}s"
    s = ms // 1000
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86_400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86_400}d{s % 86_400 // 3600:02d}h"


def fmt_rate(per_s: float | None) -> str:
    return "-" if per_s is None else f"{per_s:.1f}/s"


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def fmt_perm(perm: int) -> str:
    """``RW-`` style: read, write, inherit (PermName's 4, 2, 1)."""
    return ("R" if perm & 4 else "-") + ("W" if perm & 2 else "-") + ("X" if perm & 1 else "-")


def parse_perm(text: str) -> int:
    """``R``/``W``/``RW`` (any case) or mqadmin's numbers 2/4/6; raises ValueError."""
    t = text.strip().upper()
    if t.isdigit():
        value = int(t)
        if value not in (2, 4, 6):
            raise ValueError(f"perm {text!r}: use 2 (write), 4 (read) or 6 (read+write)")
        return value
    if not t or set(t) - {"R", "W"}:
        raise ValueError(f"perm {text!r}: use R, W or RW (or 4, 2, 6)")
    return (4 if "R" in t else 0) | (2 if "W" in t else 0)


class DelayRow(Protocol):
    """One delay level's progress, whether read from a store or from a live broker."""

    @property
    def level(self) -> int: ...
    @property
    def delay_ms(self) -> int: ...
    @property
    def delivered(self) -> int: ...
    @property
    def max_offset(self) -> int: ...
    @property
    def waiting(self) -> int: ...
    @property
    def head_due_timestamp(self) -> int | None: ...


def delay_table(
    rows: Iterable[DelayRow],
    title: str,
    *,
    rates: dict[int, float | None] | None = None,
    now_ms: int | None = None,
) -> Table:
    """The per-level table: delivered / max offsets of ``SCHEDULE_TOPIC_XXXX`` queue
    level-1, messages waiting, when the head is due (and how overdue it is when
    ``now_ms`` is given), and the delivery rate when ``rates`` (level -> msg/s) is given."""
    rows = list(rows)
    columns = ["LEVEL", "DELAY", "DELIVERED", "MAX", "WAITING", "HEAD-DUE"]
    if now_ms is not None:
        columns.append("DUE-IN")
    if rates is not None:
        columns.append("RATE")
    table = make_table(title, *columns, count=len(rows))
    for d in rows:
        due = d.head_due_timestamp if d.waiting else None
        values = [
            str(d.level),
            fmt_delay(d.delay_ms),
            str(d.delivered),
            str(d.max_offset),
            str(d.waiting),
            fmt_ts(due) if due else "-",
        ]
        if now_ms is not None:
            if not due:
                values.append("-")
            elif due >= now_ms:
                values.append(fmt_age(due - now_ms))
            else:
                values.append(f"[yellow]overdue {fmt_age(now_ms - due)}[/]")
        if rates is not None:
            values.append(fmt_rate(rates.get(d.level)))
        table.add_row(*values)
    return table
