"""Regenerate tests/tui/snapshots/*.svg: every view of the dashboard rendered from the
fixed sample snapshot (no cluster, UTC, fixed size), kept in the repository so layout
changes show up in review. Run: ``.venv/bin/python tests/tui/make_snapshots.py``."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from tui_fakes import NOW_MS, FakePoller

from mqcli.tui.app import VIEWS, MQApp
from mqcore.message import MessageExt

HERE = Path(__file__).resolve().parent

SIZE = (140, 40)
OUT = HERE / "snapshots"


def sample_messages() -> list[MessageExt]:
    out = []
    for i in range(3):
        text = f'{{"order": {40 + i}, "amount": "12.50"}}'.encode()
        msg = MessageExt(
            topic="%DLQ%billing" if i else "Orders",
            body=text if i != 1 else bytes(range(40)),
            properties={"TAGS": "paid", "KEYS": f"order-{40 + i}", "RETRY_TOPIC": "Orders",
                        "UNIQ_KEY": f"0A00000900002A9F0000000000000{i:03d}"},
            queue_id=i,
            queue_offset=7 + i,
            born_timestamp=NOW_MS - 60_000,
            born_host=("10.0.0.9", 51234),
            store_timestamp=NOW_MS - 59_990 + i,
            store_host=("10.0.0.1", 10911),
            commit_log_offset=4096 * (i + 1),
            store_size=180,
        )  # fmt: skip
        out.append(msg)
    return out


async def render(view: str) -> str:
    app = MQApp("10.0.0.1:9876", refresh=0, poller=FakePoller(), view=view)
    async with app.run_test(size=SIZE) as pilot:
        app.refresh_now()
        while app.polls < 1:
            await pilot.pause(0.02)
        screen = app.screen
        if view == "messages":
            screen.show_results(sample_messages()[:1], "key order-40 in Orders")  # type: ignore[attr-defined]
        if view == "dlq":
            screen.show_messages("billing", sample_messages()[1:])  # type: ignore[attr-defined]
        await pilot.pause()
        await pilot.pause(0.2)
        return app.export_screenshot(title=f"mq tui: {view}")


async def main() -> None:
    os.environ["TZ"] = "UTC"
    time.tzset()
    OUT.mkdir(exist_ok=True)
    for i, view in enumerate(VIEWS, start=1):
        path = OUT / f"{i}-{view}.svg"
        path.write_text(await render(view))
        print(path.relative_to(HERE.parents[1]))


if __name__ == "__main__":
    asyncio.run(main())
