"""Generate the command reference of the documentation site from the `mq` command tree.

The site's pages under ``commands/`` are built from the same typer app as ``--help`` and the
man pages (:mod:`mqcli.docgen`), when the site is built: they cannot drift from the code.
One page per top-level command, holding its subcommands; an index page groups them by the
help's panels.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import typer
from typer._click import Context

COMMANDS_DIR = "commands"
_MARKDOWN_SPECIAL = re.compile(r"([\\*_\[\]|<>&#])")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


@dataclass(frozen=True)
class Page:
    """One generated page: where it goes in the site, its nav title and its markdown."""

    path: str
    title: str
    text: str


def _escape_prose(text: str) -> str:
    return _MARKDOWN_SPECIAL.sub(lambda m: _ENTITIES.get(m.group(1), "\\" + m.group(1)), text)


def escape_markdown(text: str) -> str:
    """Markdown-safe prose: code spans (between backticks) are kept as they are."""
    parts = text.split("`")
    unmatched = parts.pop() if len(parts) % 2 == 0 else None
    parts[::2] = [_escape_prose(part) for part in parts[::2]]
    escaped = "`".join(parts)
    if unmatched is not None:  # a lone backtick: shown as itself, not opening a code span
        escaped += "\\`" + _escape_prose(unmatched)
    return escaped


def help_markdown(text: str) -> str:
    """Help text as markdown: indented lines (examples, tables) become code blocks."""
    out: list[str] = []
    code: list[str] = []

    def flush_code() -> None:
        if code:
            body = inspect.cleandoc("\n".join(code))
            out.extend(["", "```text", body, "```", ""])
            code.clear()

    for line in text.splitlines():
        if line.strip() == "\b":  # click's "do not rewrap" marker
            continue
        if line.startswith((" ", "\t")) and line.strip():
            code.append(line)
            continue
        if code and not line.strip():
            code.append(line)
            continue
        flush_code()
        out.append(escape_markdown(line))
    flush_code()
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def _help(cmd: Any) -> str:
    return inspect.cleandoc(cmd.help or "").partition("\f")[0].strip()


def _short(cmd: Any) -> str:
    text = _help(cmd)
    return text.split("\n\n")[0].replace("\n", " ").rstrip(".") if text else ""


def _visible_subcommands(cmd: Any) -> dict[str, Any]:
    subs = getattr(cmd, "commands", {})
    return {name: sub for name, sub in sorted(subs.items()) if not getattr(sub, "hidden", False)}


def _walk(cmd: Any, ctx: Context) -> Iterator[tuple[Any, Context]]:
    yield cmd, ctx
    for name, sub in _visible_subcommands(cmd).items():
        yield from _walk(sub, Context(sub, info_name=name, parent=ctx))


def _anchor(command_path: str) -> str:
    return command_path.replace(" ", "-")


def command_section(cmd: Any, ctx: Context, level: int, subcommands: bool = True) -> str:
    """The reference of one command: usage, description, arguments, options and (when
    ``subcommands``) links to the subcommands' sections on the same page."""
    path = ctx.command_path
    lines = [f"{'#' * level} {path} {{#{_anchor(path)}}}", ""]
    usage = " ".join([path, *cmd.collect_usage_pieces(ctx)])
    lines += ["```text", usage, "```", ""]
    description = help_markdown(_help(cmd))
    if description:
        lines += [description, ""]
    arguments = [p for p in cmd.params if p.param_type_name == "argument"]
    options = [
        record
        for p in cmd.params
        if p.param_type_name == "option" and not p.hidden
        for record in [p.get_help_record(ctx)]
        if record is not None
    ]
    if arguments:
        lines += ["**Arguments**", ""]
        for arg in arguments:
            name = (arg.metavar or arg.name or "ARG").upper()
            extra = "" if arg.required else " (optional)"
            lines.append(
                f"- `{name}`{extra}: {escape_markdown(getattr(arg, 'help', '') or '')}".rstrip()
            )
        lines.append("")
    if options:
        lines += ["**Options**", ""]
        for flags, text in options:
            lines.append(f"- `{flags}`: {escape_markdown(' '.join(text.split()))}".rstrip(": "))
        lines.append("")
    subs = _visible_subcommands(cmd) if subcommands else {}
    if subs:
        lines += ["**Commands**", ""]
        for name, sub in subs.items():
            sub_path = f"{path} {name}"
            lines.append(f"- [`{sub_path}`](#{_anchor(sub_path)}): {escape_markdown(_short(sub))}")
        lines.append("")
    epilog = help_markdown(inspect.cleandoc(cmd.epilog or ""))
    if epilog:
        lines += [epilog, ""]
    return "\n".join(lines)


def command_page(cmd: Any, ctx: Context) -> str:
    """A top-level command's page: itself at level 1, each subcommand one level deeper."""
    root_depth = len(ctx.command_path.split())
    sections = [
        command_section(sub, sub_ctx, level=len(sub_ctx.command_path.split()) - root_depth + 1)
        for sub, sub_ctx in _walk(cmd, ctx)
    ]
    return "\n".join(sections)


def command_pages(app: typer.Typer) -> list[Page]:
    """The index page (commands grouped by their help panel, in the help's order) and one
    page per top-level command."""
    root = typer.main.get_command(app)
    root_ctx = Context(root, info_name="mq")
    subs = {
        name: sub
        for name, sub in getattr(root, "commands", {}).items()
        if not getattr(sub, "hidden", False)
    }
    panels: dict[str, list[str]] = {}
    for name, sub in subs.items():
        panels.setdefault(getattr(sub, "rich_help_panel", None) or "Commands", []).append(name)
    pages = [
        Page(
            f"{COMMANDS_DIR}/{name}.md",
            f"mq {name}",
            command_page(sub, Context(sub, info_name=name, parent=root_ctx)),
        )
        for names in panels.values()
        for name in names
        for sub in [subs[name]]
    ]
    index = [
        "# Commands",
        "",
        "Every `mq` command, generated from the command tree: the same text as `--help` and "
        "the man pages (`man mq-COMMAND`).",
        "",
        command_section(root, root_ctx, level=2, subcommands=False),
    ]
    for panel, names in panels.items():
        index += [f"## {panel}", ""]
        index += [f"- [`mq {n}`]({n}.md): {escape_markdown(_short(subs[n]))}" for n in names]
        index.append("")
    return [Page(f"{COMMANDS_DIR}/index.md", "Overview", "\n".join(index)), *pages]
