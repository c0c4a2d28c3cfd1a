"""`mq produce -i`: a prompt that sends one message per line (prompt-toolkit).

History is kept in ``<config dir>/produce_history`` (``MQ_CONFIG_DIR``, default
``~/.config/mq``). Tab completes ``:commands``, topic names (asked of the name server at
start) after ``:topic``, and the tags used in this session after ``:tag``. Settings made
with ``:tag``, ``:key``, ``:delay`` and ``:prop`` stick to the following messages until
changed; ``::text`` sends a body that starts with a colon.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory

from mqcli.commands.produce_output import Printer
from mqcli.commands.produce_spec import PlaceholderError, Spec, send_one
from mqcli.connect import config_dir
from mqcli.credentials import client_config
from mqcli.output import err_console, fail
from mqcore.client import Admin, Producer
from mqcore.errors import MQError

COMMANDS: dict[str, str] = {
    ":tag": ":tag X       tag of the next messages (:tag alone clears it)",
    ":key": ":key K [K2]  keys of the next messages (:key alone clears them)",
    ":delay": ":delay N     delay level 1..18 (0 clears it)",
    ":prop": ":prop k=v    set a user property (k= removes it, :prop alone clears all)",
    ":topic": ":topic T     send to another topic",
    ":show": ":show        what the next message will carry",
    ":help": ":help        this list",
    ":quit": ":quit        leave (Ctrl-D too)",
}
_SYSTEM_PREFIXES = ("%RETRY%", "%DLQ%", "rmq_sys_", "RMQ_SYS_", "SCHEDULE_TOPIC", "TBW102")


@dataclass(slots=True)
class Session:
    spec: Spec
    topics: set[str] = field(default_factory=set)
    tags: set[str] = field(default_factory=set)

    def prompt(self) -> str:
        extras = []
        if self.spec.tag:
            extras.append(f"tag={self.spec.tag}")
        if self.spec.keys:
            extras.append(f"keys={' '.join(self.spec.keys)}")
        if self.spec.delay:
            extras.append(f"delay={self.spec.delay}")
        if self.spec.props:
            extras.append(",".join(f"{k}={v}" for k, v in self.spec.props.items()))
        return f"{self.spec.topic}{'[' + ' '.join(extras) + ']' if extras else ''}> "

    def show(self) -> str:
        s = self.spec
        return (
            f"topic={s.topic} tag={s.tag or '-'} keys={' '.join(s.keys) or '-'} "
            f"delay={s.delay} props={s.props or '-'}"
        )

    def command(self, line: str) -> str | None:
        """Apply one ``:command``; returns a line to show (None: nothing to say).
        Raises ValueError with a helpful text on bad input."""
        name, _, arg = line.strip().partition(" ")
        arg = arg.strip()
        spec = self.spec
        if name == ":tag":
            spec.tag = arg or None
            if arg:
                self.tags.add(arg)
            return f"tag: {arg or '(none)'}"
        if name == ":key":
            spec.keys = arg.split()
            return f"keys: {arg or '(none)'}"
        if name == ":delay":
            if not arg.isdigit():
                raise ValueError(":delay takes a level number, e.g. :delay 3 (10 s)")
            spec.delay = int(arg)
            return f"delay level: {spec.delay or '(none)'}"
        if name == ":prop":
            if not arg:
                spec.props.clear()
                return "properties cleared"
            key, sep, value = arg.partition("=")
            if not sep or not key.strip():
                raise ValueError(":prop takes name=value (name= removes it)")
            if value:
                spec.props[key.strip()] = value
            else:
                spec.props.pop(key.strip(), None)
            return f"properties: {spec.props or '(none)'}"
        if name == ":topic":
            if not arg:
                raise ValueError(":topic takes a topic name")
            spec.topic = arg
            return f"topic: {arg}"
        if name == ":show":
            return self.show()
        if name in (":help", ":?"):
            return "\n".join(COMMANDS.values())
        raise ValueError(f"unknown command {name}; :help lists them (::text sends ':text')")


class PromptCompleter(Completer):
    """``:commands``, then topics after ``:topic`` and session tags after ``:tag``."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith(":") or text.startswith("::"):
            return
        if " " not in text:
            for name in COMMANDS:
                if name.startswith(text):
                    yield Completion(name, -len(text), display_meta=COMMANDS[name][12:])
            return
        name, _, word = text.partition(" ")
        pool = {":topic": self.session.topics, ":tag": self.session.tags}.get(name, set())
        for candidate in sorted(pool):
            if candidate.startswith(word):
                yield Completion(candidate, -len(word))


async def _topics(namesrv: str) -> set[str]:
    try:
        async with Admin(namesrv, client_config=client_config()) as admin:
            names = await admin.topic_list()
    except MQError:
        return set()
    return {t for t in names if not t.startswith(_SYSTEM_PREFIXES)}


async def run_prompt(namesrv: str, group: str, spec: Spec, *, timeout: float, as_json: bool) -> int:
    """The prompt loop; returns the exit code (1 if any send failed)."""
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        fail("mq produce -i needs a terminal", hint="pipe lines to `mq produce -t T` instead")
    session = Session(spec, await _topics(namesrv), {spec.tag} if spec.tag else set())
    history = config_dir() / "produce_history"
    history.parent.mkdir(parents=True, exist_ok=True)
    prompt: PromptSession[str] = PromptSession(
        history=FileHistory(str(history)), completer=PromptCompleter(session)
    )
    printer = Printer(as_json=as_json, quiet=False)
    failed = sent = 0
    err_console.print(
        f"sending to [bold]{spec.topic}[/]: one message per line; :help for commands,"
        " Ctrl-D or :quit to leave",
        highlight=False,
    )
    async with Producer(
        group, namesrv, send_timeout=timeout, client_config=client_config()
    ) as producer:
        while True:
            try:
                line = await prompt.prompt_async(session.prompt())
            except EOFError:
                break
            except KeyboardInterrupt:
                continue
            if not line.strip():
                continue
            if line.startswith(":") and not line.startswith("::"):
                if line.strip() in (":quit", ":q", ":exit"):
                    break
                try:
                    said = session.command(line)
                except ValueError as exc:
                    err_console.print(f"[red]{exc}[/]", highlight=False)
                    continue
                if said:
                    err_console.print(said, markup=False, highlight=False)
                continue
            if line.startswith("::"):
                line = line[1:]
            try:
                msg = spec.build(line.encode(), sent + failed + 1)
            except (PlaceholderError, MQError) as exc:
                err_console.print(f"[red]{exc}[/]", highlight=False)
                continue
            try:
                result, error = await send_one(producer, spec, msg, sent + failed + 1, oneway=False)
            except MQError as exc:  # no route, name server down: say so and keep the prompt
                result, error = None, str(exc)
            if error:
                failed += 1
            else:
                sent += 1
            printer.result(sent + failed, msg, result, error)
    err_console.print(f"{sent} sent, {failed} failed", highlight=False)
    return 1 if failed else 0
