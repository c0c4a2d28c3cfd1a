"""The `mq produce -i` session logic and completer, without a terminal."""

from __future__ import annotations

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from mqcli.commands.produce_spec import Spec
from mqcli.interactive import COMMANDS, PromptCompleter, Session


def _complete(session: Session, text: str) -> list[str]:
    completer = PromptCompleter(session)
    return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]


def test_commands_change_what_the_next_message_carries() -> None:
    session = Session(Spec("Orders"))
    assert session.prompt() == "Orders> "
    session.command(":tag paid")
    session.command(":key o-1 o-2")
    session.command(":delay 3")
    session.command(":prop region=eu")
    assert session.prompt() == "Orders[tag=paid keys=o-1 o-2 delay=3 region=eu]> "
    msg = session.spec.build(b"body {{Count}}", 7)
    assert (msg.body, msg.tags, msg.keys, msg.delay_level) == (b"body 7", "paid", ["o-1", "o-2"], 3)
    assert msg.properties["region"] == "eu"
    session.command(":prop region=")
    session.command(":tag")
    session.command(":key")
    session.command(":delay 0")
    session.command(":topic Other")
    assert session.prompt() == "Other> "
    assert session.tags == {"paid"}
    assert ":quit" in session.command(":help")  # type: ignore[operator]


@pytest.mark.parametrize(
    ("line", "needle"),
    [(":delay soon", "level number"), (":prop x", "name=value"), (":topic", "topic name"),
     (":frob", "unknown command :frob")],
)  # fmt: skip
def test_bad_commands_explain(line: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        Session(Spec("T")).command(line)


def test_completion_of_commands_topics_and_session_tags() -> None:
    session = Session(Spec("T"), topics={"Orders", "Other", "Bills"}, tags={"paid", "open"})
    assert _complete(session, ":t") == [":tag", ":topic"]
    assert _complete(session, ":topic O") == ["Orders", "Other"]
    assert _complete(session, ":tag p") == ["paid"]
    assert _complete(session, ":key ") == []
    assert _complete(session, "plain text") == [] and _complete(session, "::x") == []
    assert set(COMMANDS) >= {":tag", ":key", ":delay", ":prop", ":help", ":quit"}
