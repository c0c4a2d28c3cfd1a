"""mkdocs hooks: the command reference, the changelog and the benchmark figures are pages
generated at build time.

The command pages come from the `mq` command tree (:mod:`mqcli.docgen_md`), the changelog
and the figures from CHANGELOG.md and bench/README.md, so nothing is kept twice. The nav entry
``commands/index.md`` is expanded into one entry per command.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from mqcli.docgen_md import COMMANDS_DIR, Page, command_pages

ROOT = Path(__file__).resolve().parents[1]
COPIED = {"changelog.md": "CHANGELOG.md", "benchmarks.md": "bench/README.md"}
"""Site page -> the repository file it shows."""
# The docstrings name objects with Sphinx roles (:class:`~mqcore.client.Producer`), which
# markdown renders as the role's text followed by a code span: keep the code span only.
_SPHINX_ROLE = re.compile(r":(?:class|meth|func|mod|data|attr|exc|obj):<code>(~?)([^<]*)</code>")
_pages: list[Page] = []


def _generated() -> list[Page]:
    if not _pages:
        from mqcli.main import app

        _pages.extend(command_pages(app))
    return _pages


def _expand(nav: Any, entries: list[Any]) -> Any:
    if isinstance(nav, list):
        return [_expand(item, entries) for item in nav]
    if isinstance(nav, dict):
        return {
            title: entries if target == f"{COMMANDS_DIR}/index.md" else _expand(target, entries)
            for title, target in nav.items()
        }
    return nav


def _targets(nav: Any) -> set[str]:
    if isinstance(nav, list):
        return set().union(*(_targets(item) for item in nav))
    if isinstance(nav, dict):
        return set().union(*(_targets(target) for target in nav.values()))
    return {nav} if isinstance(nav, str) else set()


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    entries = [{page.title: page.path} for page in _generated()]
    config.nav = _expand(config.nav, entries)
    # A page added under docs/ without a nav entry still gets one (titled by its heading),
    # rather than failing the strict build or hiding from the navigation.
    docs = Path(config.docs_dir)
    listed = _targets(config.nav)
    unlisted = sorted(
        path.relative_to(docs).as_posix()
        for path in docs.rglob("*.md")
        if path.relative_to(docs).as_posix() not in listed
    )
    if unlisted:
        config.nav.append({"More": unlisted})
    return config


def _strip_role(match: re.Match[str]) -> str:
    name = match.group(2).rsplit(".", 1)[-1] if match.group(1) else match.group(2)
    return f"<code>{name}</code>"


def on_page_content(html: str, **_: Any) -> str:
    return _SPHINX_ROLE.sub(_strip_role, html)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for page in _generated():
        files.append(File.generated(config, page.path, content=page.text))
    for site_path, source in COPIED.items():
        text = (ROOT / source).read_text(encoding="utf-8")
        files.append(File.generated(config, site_path, content=text))
    return files
