"""The documentation site's generated command reference and its getting-started page.

`make site` (part of `make test`) builds the site with warnings as errors; these tests
check what a successful build cannot: that every command has its section and that the
walkthrough is the README's.
"""

from __future__ import annotations

import re
from pathlib import Path

from mqcli.docgen import man_pages
from mqcli.docgen_md import command_pages, escape_markdown, help_markdown
from mqcli.main import app

REPO = Path(__file__).resolve().parents[2]


def test_every_command_has_a_section_on_its_page() -> None:
    pages = command_pages(app)
    anchors = {
        anchor: page.path
        for page in pages
        for anchor in re.findall(r"^#+ mq[ \w-]* \{#([\w-]+)\}$", page.text, re.MULTILINE)
    }
    expected = {name.removesuffix(".1") for name in man_pages(app)}
    assert set(anchors) == expected
    assert anchors["mq-group-lag"] == "commands/group.md"
    assert anchors["mq-produce"] == "commands/produce.md"
    assert anchors["mq"] == "commands/index.md"


def test_command_pages_link_only_to_pages_that_exist() -> None:
    pages = command_pages(app)
    paths = {page.path for page in pages}
    index = pages[0]
    linked = {f"commands/{target}" for target in re.findall(r"\]\(([\w-]+\.md)\)", index.text)}
    assert linked == paths - {index.path}
    for page in pages[1:]:
        local = set(re.findall(r"\]\(#([\w-]+)\)", page.text))
        defined = set(re.findall(r"\{#([\w-]+)\}", page.text))
        assert local <= defined, (page.path, local - defined)


def test_a_command_page_shows_usage_options_and_examples_as_code() -> None:
    (group,) = [p for p in command_pages(app) if p.path == "commands/group.md"]
    section = group.text.split("{#mq-group-lag}", 1)[1].split("\n## ", 1)[0]
    assert "```text\nmq group lag [OPTIONS] [GROUP]\n```" in section
    assert "- `-n, --namesrv TEXT`: " in section
    assert "```text\nmq group lag billing\n" in section  # the help's examples, as a block


def test_help_text_is_escaped_outside_code() -> None:
    assert (
        escape_markdown("a <ADDR> | b_c *x* `<kept>`") == r"a &lt;ADDR&gt; \| b\_c \*x\* `<kept>`"
    )
    assert escape_markdown("one ` tick") == r"one \` tick"
    text = "Do it.\n\nExamples:\n  mq a --x 1\n  mq b\n\nAfter."
    assert help_markdown(text) == "Do it.\n\nExamples:\n\n```text\nmq a --x 1\nmq b\n```\n\nAfter."


def test_getting_started_walks_through_the_readme() -> None:
    """The README's first two commands and every line of its walkthrough are on the page."""
    readme = (REPO / "README.md").read_text()
    page = (REPO / "docs" / "getting-started.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.DOTALL)
    lines = [line for block in blocks[:2] for line in block.splitlines() if line.strip()]
    assert any(line.startswith("make run") for line in lines)
    assert any(".venv/bin/mq produce" in line for line in lines)
    for line in lines:
        command = line.split("  #", 1)[0].strip()
        assert command in page, f"docs/getting-started.md lacks the README's {command!r}"


def test_zsh_completion_starts_with_compdef() -> None:
    """zsh's compinit registers a completion file only when #compdef is its first line."""
    first = (Path(__file__).resolve().parents[2] / "completions" / "mq.zsh").read_text()
    assert first.splitlines()[0] == "#compdef mq"
