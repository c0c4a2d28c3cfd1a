"""Running third-party clients from the interop tests: each in its own process (Node.js
for ali-ons, a Python process for the C++-core client), one JSON object per stdout line."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from mqcore.client import Admin
from tests.support import until

ALIONS_SCRIPT = Path(__file__).with_name("alions_clients.js")


async def run_json_lines(
    command: list[str], *args: str, env: dict[str, str] | None = None, timeout: float = 90
) -> list[dict[str, Any]]:
    """Run ``command ARGS`` to the end (killed at ``timeout``); the JSON lines it printed.
    A non-zero exit fails the test with the end of its stderr."""
    proc = await asyncio.create_subprocess_exec(
        *command,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()[-3000:]
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


def alions_env(alions_dir: Path, **extra: str) -> dict[str, str]:
    return {"ALIONS_NODE_DIR": str(alions_dir), **extra}


async def node(alions_dir: Path, *args: str, timeout: float = 60) -> list[dict[str, Any]]:
    """``node alions_clients.js ARGS`` with ali-ons from ``alions_dir``."""
    return await run_json_lines(
        ["node", str(ALIONS_SCRIPT)], *args, env=alions_env(alions_dir), timeout=timeout
    )


async def registered(admin: Admin, timeout: float = 15) -> None:
    """Wait (with a deadline) until a broker has registered at the name server."""
    await until(admin.master_addrs, timeout, "a broker to register", interval=0.05)
