"""A master that stops being master acknowledges nothing more, and a slave told of a new
master leaves the old one at once.

The defect these guard (found by the partition test): a master cut off the network
stored sends while it could not replicate them; when the network healed it learned of
the new epoch, and clearing its in-sync set switched the waiting sends to the 4.x rule
("any slave holds it"), which a slave still attached to it satisfied: they were answered
SEND_OK, and the new master never had them. That slave was still attached because a
new master's address did not end the session with the old one."""

from __future__ import annotations

import asyncio
from typing import cast

from mqcore.broker.ha.master import HAConnection, HAService
from mqcore.broker.ha.slave import HAClient
from mqcore.store.commitlog import CommitLog
from mqcore.store.message_store import MessageStore
from mqcore.store.store_config import MessageStoreConfig
from tests.support.polling import until

MASTER, SLAVE = 1, 2


class Log:
    def __init__(self, end: int) -> None:
        self.max_offset = end


class Slave:
    def __init__(self, slave_id: int, ack: int) -> None:
        self.slave_id = slave_id
        self.ack_offset = ack
        self.caught_up_ms = None
        self.data_ready = asyncio.Event()


def ha_service(*, identities: bool) -> HAService:
    config = MessageStoreConfig(all_ack_in_sync_state_set=True)
    return HAService(cast(CommitLog, Log(1000)), config, host="127.0.0.1", identities=identities)


async def test_a_fenced_master_answers_its_waiting_sends_as_not_replicated() -> None:
    ha = ha_service(identities=True)
    ha.in_sync_ids = {MASTER, SLAVE, 3}
    conn = cast(HAConnection, Slave(SLAVE, ack=1000))
    ha.connections.add(conn)
    waiting = asyncio.ensure_future(ha.wait_for_slave(1000, 10))
    await asyncio.sleep(0)
    ha.push2slave_max_offset = 1000  # a slave still attached holds it ...
    ha.fence()  # ... but this broker is told another is master
    ha.in_sync_ids = None
    assert await asyncio.wait_for(waiting, 5) is False
    assert not ha.replicated(1000)
    assert await ha.wait_for_slave(1000, 0.01) is False


def test_controller_mode_without_an_in_sync_set_replicates_nothing() -> None:
    """Not (or no longer) master in controller mode: the 4.x rule does not apply."""
    ha = ha_service(identities=True)
    ha.push2slave_max_offset = 1000
    assert not ha.replicated(1000)
    four = ha_service(identities=False)  # 4.x master/slave: any slave holding it counts
    four.push2slave_max_offset = 1000
    assert four.replicated(1000)


class Store:
    """What an HA client reads of its store before any byte arrives."""

    max_phy_offset = 0

    def dispatch_replicated(self) -> None:
        pass


async def test_a_slave_leaves_its_old_master_as_soon_as_another_is_named() -> None:
    """The old master's connection is open and silent (as when it was cut off): the
    client must not wait for ``haHousekeepingInterval`` to end it."""
    peers: dict[str, list[asyncio.StreamReader]] = {"old": [], "new": []}

    def accept(name: str):  # type: ignore[no-untyped-def]
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            peers[name].append(reader)
            await reader.read()  # until the client closes
            writer.close()

        return serve

    old = await asyncio.start_server(accept("old"), "127.0.0.1", 0)
    new = await asyncio.start_server(accept("new"), "127.0.0.1", 0)
    address = {
        n: f"127.0.0.1:{s.sockets[0].getsockname()[1]}" for n, s in (("old", old), ("new", new))
    }
    config = MessageStoreConfig(ha_housekeeping_interval=60_000, ha_master_address=address["old"])
    client = HAClient(cast(MessageStore, Store()), config)
    client.start()
    try:
        await until(lambda: client.connected and len(peers["old"]) == 1, 10, "following old")
        client.update_master_address(address["new"])
        await until(lambda: len(peers["new"]) == 1 and client.connected, 10, "following new")
        await until(lambda: peers["old"][0].at_eof(), 10, "the old master's connection closed")
    finally:
        await client.close()
        old.close()
        new.close()
