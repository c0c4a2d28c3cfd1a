"""`mq --help` without typer and rich: the root page, drawn as typer's rich renderer draws it.

Loading typer and rich costs about 100 ms of CPU, nine times a bare interpreter start,
for a page that depends only on the command tree, the terminal's width and whether the
terminal takes colours. So the entry point asks :func:`page` first: it reads what the
page says from ``roothelp.txt`` (written by ``make docs`` from the command tree, see
:func:`mqcli.docgen.root_help_model`, and checked by a test like the man pages) and lays
it out with the few rules of rich that the page uses: a padded usage line and
paragraphs, and rounded panels holding a two-column table (commands) or a six-column one
(options) whose last column takes what is left and wraps at word boundaries.

Where the result could differ from typer's, :func:`page` returns None and the caller
runs the app instead: an environment that changes rich's console (``FORCE_COLOR``,
``NO_COLOR``, ``TERMINAL_WIDTH``, ``TTY_COMPATIBLE``, a dumb terminal, a non-UTF-8
stdout, Windows) or a terminal so narrow that rich would start squeezing other columns.
``tests/cli/test_roothelp.py`` compares both renderings character for character (and
colour for colour on a terminal) at many widths.

Only ``os`` and ``sys`` are imported here (``re`` too when the page is coloured): the
point is what is not loaded.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["MODEL_FILE", "page", "render"]

MODEL_FILE = "roothelp.txt"

_FALLBACK_ENV = (
    "FORCE_COLOR",
    "PY_COLORS",
    "GITHUB_ACTIONS",
    "NO_COLOR",
    "TERMINAL_WIDTH",
    "TTY_COMPATIBLE",
    "_TYPER_FORCE_DISABLE_TERMINAL",
    "_MQ_COMPLETE",
    "JUPYTER_COLUMNS",
)
"""Variables that change how typer's console draws (or that this is not a help request)."""

# Styles as SGR parameters (what rich writes for typer's styles): bold, dim and a colour.
_BOLD, _DIM = "1", "2"
_COLORS = {"yellow": "33", "cyan": "36", "green": "32", "magenta": "35", "red": "31"}

# A styled line: (text, style) pieces; style is a tuple of SGR parameters.
Piece = tuple[str, tuple[str, ...]]
Line = list[Piece]


def page() -> str | None:
    """The root help as typer would print it to this stdout, or None when this module
    cannot promise that."""
    if os.name != "posix" or any(name in os.environ for name in _FALLBACK_ENV):
        return None
    encoding = (getattr(sys.stdout, "encoding", None) or "utf-8").lower()
    if not encoding.startswith("utf"):
        return None  # rich draws ASCII boxes then
    try:
        color = sys.stdout.isatty()
    except ValueError:  # a closed stdout
        return None
    if color and os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
        return None
    width = _console_width()
    try:
        with open(os.path.join(os.path.dirname(__file__), MODEL_FILE), encoding="utf-8") as f:
            model = f.read()
    except OSError:
        return None
    return render(model, width, color=color, prog=prog_name())


def prog_name() -> str:
    """The program name click puts in the usage line: the script's name, or
    ``python -m PACKAGE.MODULE`` when run with ``-m``."""
    main = sys.modules.get("__main__")
    path = sys.argv[0] if sys.argv and sys.argv[0] else "mq"
    package = getattr(main, "__package__", None)
    if not package:
        return os.path.basename(path)
    name = os.path.splitext(os.path.basename(path))[0]
    module = package if name == "__main__" else f"{package}.{name}"
    return f"python -m {module.lstrip('.')}"


def _console_width() -> int:
    """The width rich's console picks: ``COLUMNS``, else the terminal of stdin, stdout or
    stderr, else 80."""
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns)
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd).columns
        except (AttributeError, ValueError, OSError):
            continue
        return width or 80
    return 80


# -- the model --------------------------------------------------------------------------------


def _parse(model: str) -> list[list[str]]:
    """``roothelp.txt``: one record per line, fields separated by tabs; ``#`` comments."""
    return [line.split("\t") for line in model.splitlines() if line and not line.startswith("#")]


def render(model: str, width: int, *, color: bool, prog: str = "mq") -> str | None:
    """The page ``model`` describes at ``width`` columns (with ANSI colours when
    ``color``), or None where the layout would need rules this module does not have."""
    records = _parse(model)
    if width < 20:
        return None
    lines: list[Line] = []
    panels: list[tuple[str, str, list[list[str]]]] = []
    head: dict[str, str] = {}
    for record in records:
        kind = record[0]
        if kind in ("usage", "help", "epilog"):
            head[kind] = record[1]
        elif kind == "panel":
            panels.append((record[1], record[2], []))
        elif kind == "row" and panels:
            panels[-1][2].append(record[1:])
        else:
            return None
    hl = _Highlighter() if color else None
    # the usage line: padding 1 all round, bold
    usage_line = f"Usage: {prog} {head['usage']}"
    usage = _padded(_styled(usage_line, (), hl, _OPTION_RULES), width, (1, 1, 1, 1), (_BOLD,))
    if usage is None:
        return None
    lines += usage
    if "help" in head:
        text = _padded(_styled(head["help"], (), hl, _OPTION_RULES), width, (0, 1, 1, 1), ())
        if text is None:
            return None
        lines += text
    name_width = max(
        (len(row[0]) for kind, _, rows in panels if kind == "commands" for row in rows), default=0
    )
    for kind, title, rows in panels:
        if kind == "options":
            body = _options_table(rows, width - 4, hl)
        else:
            body = _commands_table(rows, width - 4, name_width, hl)
        if body is None:
            return None
        lines += _panel(title, body, width)
    if "epilog" in head:
        text = _padded(_styled(head["epilog"], (), hl, _OPTION_RULES), width, (1, 1, 1, 1), ())
        if text is None:
            return None
        lines += text
    return "".join(_line_text(line, color) + "\n" for line in lines)


# -- text ---------------------------------------------------------------------------------------


def _words(text: str) -> list[tuple[int, str]]:
    """rich's words: each run of non-space characters with the spaces around it
    (``\\s*\\S+\\s*``), as (start, word)."""
    out: list[tuple[int, str]] = []
    i, n = 0, len(text)
    while i < n:
        start = i
        while i < n and text[i].isspace():
            i += 1
        if i == n:
            break
        while i < n and not text[i].isspace():
            i += 1
        while i < n and text[i].isspace():
            i += 1
        out.append((start, text[start:i]))
    return out


def _wrap_offsets(text: str, width: int) -> list[int] | None:
    """Where rich's ``divide_line`` breaks ``text`` to fit ``width``; None when a word is
    wider than ``width`` (rich would fold it)."""
    breaks: list[int] = []
    offset = 0
    for start, word in _words(text):
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            return None
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    return breaks


class _Styled:
    """A text and the style of each of its characters."""

    __slots__ = ("styles", "text")

    def __init__(self, text: str, styles: list[tuple[str, ...]]) -> None:
        self.text = text
        self.styles = styles

    def wrap(self, width: int) -> list[_Styled] | None:
        """Lines of at most ``width`` cells (a line's trailing spaces beyond the width
        dropped, as rich does), or None."""
        if not self.text.isascii():
            return None  # wide characters: rich measures cells, this counts characters
        offsets = _wrap_offsets(self.text, width)
        if offsets is None:
            return None
        bounds = [0, *offsets, len(self.text)]
        lines = []
        for i in range(len(bounds) - 1):
            start, end = bounds[i], bounds[i + 1]
            text = self.text[start:end]
            if len(text) > width:
                text = text[:width] + text[width:].rstrip()
                if len(text) > width:
                    return None
            lines.append(_Styled(text, self.styles[start : start + len(text)]))
        return lines or [_Styled("", [])]

    def pieces(self, width: int, base: tuple[str, ...] = ()) -> Line:
        """This text padded with spaces to ``width``, as pieces of one style each."""
        line: Line = []
        for ch, style in zip(self.text, self.styles, strict=True):
            merged = _merge(base, style)
            if line and line[-1][1] == merged:
                line[-1] = (line[-1][0] + ch, merged)
            else:
                line.append((ch, merged))
        if width > len(self.text):
            line.append((" " * (width - len(self.text)), base))
        return line


def _merge(base: tuple[str, ...], over: tuple[str, ...]) -> tuple[str, ...]:
    """rich's ``Style + Style``: attributes add up, the later colour wins."""
    attrs = sorted({s for s in (*base, *over) if s in (_BOLD, _DIM)})
    colors = [s for s in (*base, *over) if s not in (_BOLD, _DIM)]
    return (*attrs, *colors[-1:])


def _style(spec: str) -> tuple[str, ...]:
    """``"bold cyan"`` -> ``("1", "36")``."""
    out: list[str] = []
    for word in spec.split():
        out.append(_BOLD if word == "bold" else _DIM if word == "dim" else _COLORS[word])
    return _merge((), tuple(out))


# typer's highlighters (typer.rich_utils): (pattern, style of the named group), in order
_OPTION_RULES = (
    (r"(^|\W)(?P<g>\-\w+)(?![a-zA-Z0-9])", "bold green"),
    (r"(^|\W)(?P<g>\-\-[\w\-]+)(?![a-zA-Z0-9])", "bold cyan"),
    (r"(?P<g>\<[^\>]+\>)", "bold yellow"),
    (r"(?P<g>Usage: )", "yellow"),
)
_NEGATIVE_RULES = (
    (r"(^|\W)(?P<g>\-\w+)(?![a-zA-Z0-9])", "bold red"),
    (r"(^|\W)(?P<g>\-\-[\w\-]+)(?![a-zA-Z0-9])", "bold magenta"),
)
_TYPES_RULES = (
    (r"^(?P<g>(\[|<))", "dim"),
    (r"(?P<g>\|)", "dim"),
    (r"(?P<g>(\]|>))(\.\.\.)?$", "dim"),
)


class _Highlighter:
    """typer's regex highlighters, for a coloured page (loads ``re``)."""

    def __init__(self) -> None:
        import re

        self._compiled: dict[str, object] = {}
        self._re = re

    def apply(self, text: str, base: tuple[str, ...], rules: Sequence[tuple[str, str]]) -> _Styled:
        styles = [base] * len(text)
        for pattern, spec in rules:
            style = _style(spec)
            for match in self._re.finditer(pattern, text):
                start, end = match.span("g")
                for i in range(start, end):
                    styles[i] = _merge(styles[i], style)
        return _Styled(text, styles)


def _styled(
    text: str,
    base: tuple[str, ...],
    hl: _Highlighter | None,
    rules: Sequence[tuple[str, str]],
) -> _Styled:
    if hl is None:
        return _Styled(text, [()] * len(text))
    return hl.apply(text, base, rules)


def _padded(
    text: _Styled, width: int, padding: tuple[int, int, int, int], style: tuple[str, ...]
) -> list[Line] | None:
    """rich's ``Padding`` (top, right, bottom, left) around wrapped text, ``width`` wide."""
    top, right, bottom, left = padding
    inner = width - left - right
    wrapped = text.wrap(inner)
    if wrapped is None or inner < 1:
        return None
    blank: Line = [(" " * width, style)]
    lines = [list(blank) for _ in range(top)]
    for line in wrapped:
        lines.append([(" " * left, style), *line.pieces(inner, style), (" " * right, style)])
    lines += [list(blank) for _ in range(bottom)]
    return lines


# -- panels and tables ------------------------------------------------------------------------


def _panel(title: str, body: list[Line], width: int) -> list[Line]:
    """A rounded panel, ``width`` wide, title at the left of its top border, dim borders,
    one space of padding left and right."""
    dim = (_DIM,)
    heading = f" {title} "
    top = "╭─" + heading + "─" * (width - 4 - len(heading)) + "─╮"
    lines: list[Line] = [[(top, dim)]]
    for line in body:
        lines.append([("│", dim), (" ", ()), *line, (" ", ()), ("│", dim)])
    lines.append([("╰" + "─" * (width - 2) + "╯", dim)])
    return lines


def _cell(text: _Styled, width: int, left: int, right: int) -> list[Line] | None:
    """A table cell's lines: ``text`` wrapped to ``width``, padded left and right."""
    wrapped = text.wrap(width)
    if wrapped is None:
        return None
    return [[(" " * left, ()), *line.pieces(width), (" " * right, ())] for line in wrapped]


def _rows(cells: list[list[list[Line]]], widths: list[int]) -> list[Line]:
    """Table rows from each row's cells (lists of lines); short cells get blank lines."""
    out: list[Line] = []
    for row in cells:
        height = max(len(c) for c in row)
        for i in range(height):
            line: Line = []
            for cell, w in zip(row, widths, strict=True):
                line += cell[i] if i < len(cell) else [(" " * w, ())]
            out.append(line)
    return out


def _options_table(rows: list[list[str]], width: int, hl: _Highlighter | None) -> list[Line] | None:
    """typer's options table: long names, short names, secondary long and short names
    (``--no-x``), value type and help; no box, one space between columns, the help
    column measured as the whole width, then squeezed to what is left."""
    if any(len(row) != 6 for row in rows):
        return None
    pads = [(0, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 0)]
    contents = [max(len(row[i]) for row in rows) for i in range(5)]
    widths = [c + left + right for c, (left, right) in zip(contents, pads, strict=False)]
    help_width = width - sum(widths)
    # rich shrinks the widest wrapable column (help, measured as `width`) down towards the
    # next widest; beyond that it would shrink the others too: not modelled
    if help_width < max(widths) or help_width < 2:
        return None
    widths.append(help_width)
    contents.append(help_width - 1)
    bold_yellow = _style("bold yellow")
    cells: list[list[list[Line]]] = []
    for row in rows:
        texts = [
            _styled(row[0], (), hl, _OPTION_RULES),
            _styled(row[1], (), hl, _OPTION_RULES),
            _styled(row[2], (), hl, _NEGATIVE_RULES),
            _styled(row[3], (), hl, _NEGATIVE_RULES),
            _styled(row[4], bold_yellow, hl, _TYPES_RULES),
            _styled(row[5], (), hl, _OPTION_RULES),
        ]
        row_cells = []
        for text, content, (left, right) in zip(texts, contents, pads, strict=True):
            cell = _cell(text, content, left, right)
            if cell is None:
                return None
            row_cells.append(cell)
        cells.append(row_cells)
    return _rows(cells, widths)


def _commands_table(
    rows: list[list[str]], width: int, name_width: int, hl: _Highlighter | None
) -> list[Line] | None:
    """typer's commands table: the name column as wide as the longest name of every
    panel (bold cyan), the help column the rest."""
    if any(len(row) != 2 for row in rows):
        return None
    first = min(name_width + 1, width)
    rest = width - first
    if rest < 2:
        return None
    name_style = _style("bold cyan")
    cells: list[list[list[Line]]] = []
    for name, summary in rows:
        if len(name) > name_width:
            return None
        name_cell = [[*_Styled(name, [()] * len(name)).pieces(name_width, name_style), (" ", ())]]
        help_cell = _cell(_styled(summary, (), hl, _OPTION_RULES), rest - 1, 1, 0)
        if help_cell is None:
            return None
        cells.append([name_cell, help_cell])
    return _rows(cells, [first, rest])


def _line_text(line: Line, color: bool) -> str:
    if not color:
        return "".join(text for text, _ in line)
    out = []
    for text, style in line:
        out.append(f"\x1b[{';'.join(style)}m{text}\x1b[0m" if style else text)
    return "".join(out)
