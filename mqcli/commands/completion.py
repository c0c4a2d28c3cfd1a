"""`mq completion SHELL`: print the shell completion script (like `rpk generate`)."""

from __future__ import annotations

import typer

from mqcli.docgen import SHELLS, completion_script
from mqcli.output import fail


def completion(
    shell: str = typer.Argument(..., help="bash, zsh or fish."),
) -> None:
    """Print the completion script for SHELL.

    Install it with, for example,
    `mq completion bash > ~/.local/share/bash-completion/completions/mq`.

    Examples:
      mq completion bash > ~/.local/share/bash-completion/completions/mq
      mq completion zsh > ~/.zfunc/_mq
    """
    if shell not in SHELLS:
        fail(f"unsupported shell {shell!r}", hint=f"choose one of: {', '.join(SHELLS)}")
    typer.echo(completion_script(shell), nl=False)


def register(app: typer.Typer) -> None:
    app.command("completion")(completion)
