"""What `mq --help` says, taken from the command tree for :mod:`mqcli.roothelp`.

``make docs`` writes it to ``mqcli/roothelp.txt`` (a test checks it is current, as it does
the man pages): one record a line, tab-separated fields. The texts are the ones typer's
rich help renderer would draw, taken through typer's own functions, so the quick
renderer only has to lay them out: usage, help and epilog lines, and panels of option
rows (long names, short names, secondary long and short names, value type, help) or
command rows (name, one-line help), in the order typer prints them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rich.text import Text
from typer import rich_utils
from typer._click import Context
from typer.core import TyperArgument, TyperGroup, TyperOption

from mqcli.helpfmt import install

__all__ = ["HIGHLIGHT_STYLES", "root_help_model"]

HIGHLIGHT_STYLES = frozenset({"switch", "option", "types", "usage", "types_sep"})
"""The only styles a text may carry: the highlighters' (roothelp draws those itself)."""

_HEADER = (
    "# mq --help, as typer draws it: written by `make docs` (mqcli/roothelp_model.py) from the\n"
    "# command tree, drawn by mqcli/roothelp.py without loading typer. Do not edit.\n"
)


class ModelError(ValueError):
    """The page uses something :mod:`mqcli.roothelp` does not draw (markup, several
    paragraphs, required options, defaults shown...): extend it before adding that."""


def _plain(text: Any, where: str) -> str:
    """The text of a rich Text that only the highlighters styled."""
    if not isinstance(text, Text):
        raise ModelError(f"{where}: {type(text).__name__}, not a plain text")
    styles = {str(span.style) for span in text.spans}
    if str(text.style or "") not in ("", "none") or styles - HIGHLIGHT_STYLES:
        raise ModelError(f"{where}: styled text {text.markup!r}")
    if "\t" in text.plain or "\n" in text.plain or not text.plain.isascii():
        raise ModelError(f"{where}: tab, newline or non-ASCII text {text.plain!r}")
    return text.plain


def _option_row(param: Any, ctx: Context, markup: Any) -> list[str]:
    if param.required or isinstance(param, TyperArgument):
        raise ModelError(f"{param.name}: arguments and required options are not drawn")
    long = ",".join(o for o in param.opts if "--" in o)
    short = ",".join(o for o in param.opts if "--" not in o)
    second_long = ",".join(o for o in param.secondary_opts if "--" in o)
    second_short = ",".join(o for o in param.secondary_opts if "--" not in o)
    kind = param.display_type_rich(ctx=ctx) or ""
    if param._get_number_range_help_str():
        raise ModelError(f"{param.name}: ranges are not drawn")
    columns = rich_utils._get_parameter_help(param=param, ctx=ctx, markup_mode=markup)
    items = list(columns.renderables)
    if len(items) > 1:
        raise ModelError(f"{param.name}: a default, env var or [required] beside the help")
    help_text = _plain(items[0], param.name) if items else ""
    return [long, short, second_long, second_short, kind, help_text]


def root_help_model(root: TyperGroup) -> str:
    """``roothelp.txt`` for the root command ``root``, as rich_format_help orders it."""
    install()  # TEXT, not <str>
    ctx = Context(root, info_name="mq", **root.context_settings)
    markup = root.rich_markup_mode
    if markup is None:
        raise ModelError("the root help is click's plain one, not typer's rich one")
    out = [_HEADER]
    usage = root.get_usage(ctx)
    head = "Usage: mq "
    if not usage.startswith(head):
        raise ModelError(f"usage {usage!r}")
    out.append(f"usage\t{usage.removeprefix(head)}\n")  # the program name: at run time
    if root.help:
        texts = list(rich_utils._get_help_text(obj=root, markup_mode=markup).renderables)
        if len(texts) != 1:
            raise ModelError("the root help has more than one paragraph")
        out.append(f"help\t{_plain(texts[0], 'help')}\n")
    panels: defaultdict[str, list[Any]] = defaultdict(list)
    for param in root.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        if not isinstance(param, TyperOption):
            raise ModelError(f"{param.name}: only options are drawn")
        panels[getattr(param, "rich_help_panel", None) or rich_utils.OPTIONS_PANEL_TITLE].append(
            param
        )
    order = [rich_utils.OPTIONS_PANEL_TITLE, *(p for p in panels if p != "Options")]
    for title in order:
        if title in panels:
            out.append(f"panel\toptions\t{title}\n")
            for param in panels[title]:
                out.append("row\t" + "\t".join(_option_row(param, ctx, markup)) + "\n")
    commands: defaultdict[str, list[Any]] = defaultdict(list)
    listing = getattr(root, "listing", None)  # what the help lists (LazyGroup: no import)
    for command in listing(ctx) if listing else root.commands.values():
        if not command.hidden:
            commands[getattr(command, "rich_help_panel", None) or "Commands"].append(command)
    for title in ["Commands", *(t for t in commands if t != "Commands")]:
        if title not in commands:
            continue
        out.append(f"panel\tcommands\t{title}\n")
        for command in commands[title]:
            if command.deprecated:
                raise ModelError(f"{command.name}: deprecated commands are not drawn")
            summary = rich_utils._make_command_help(
                help_text=command.short_help or command.help or "", markup_mode=markup
            )
            out.append(f"row\t{command.name}\t{_plain(summary, str(command.name))}\n")
    if root.epilog:
        epilog = rich_utils._make_rich_text(
            text="\n\n".join(root.epilog.split("\n\n")), markup_mode=markup
        )
        out.append(f"epilog\t{_plain(epilog, 'epilog')}\n")
    return "".join(out)
