"""A slave joins a master's in-sync set only once it holds every acknowledged message.

The defect this guards: a master acknowledged a message while its in-sync set lacked a
slave, then added that slave (which held the log's end as of its previous report, not
that message) and the controller elected it, so an acknowledged message was gone. Now
acknowledgements wait for a joiner from the moment it is picked, and it is proposed to
the controller only once it holds the log's end as of that moment. These drive
``HAService`` and ``ReplicasManager`` with a scripted controller and scripted slave
reports; the end-to-end scenario is the partition test in
tests/integration/test_controller_process.py."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, cast

import pytest

from mqcore.broker.config import BrokerConfig
from mqcore.broker.ha.master import HAConnection, HAService
from mqcore.broker.replicas import ReplicasManager
from mqcore.errors import MQBrokerError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.controller import SyncStateSet
from mqcore.store.commitlog import CommitLog
from mqcore.store.epoch_file import EpochFileCache
from mqcore.store.store_config import BrokerRole, MessageStoreConfig
from tests.support.polling import until

MASTER, SLAVE = 1, 2


class Log:
    """The one thing HAService reads of its commit log here: where it ends."""

    def __init__(self, end: int) -> None:
        self.max_offset = end


class Slave:
    """What HAService reads of a connection: who, what it acknowledged, when it last
    caught up."""

    def __init__(self, ack: int) -> None:
        self.slave_id = SLAVE
        self.ack_offset = ack
        self.caught_up_ms = time.time_ns() // 1_000_000


def slave(ack: int) -> HAConnection:
    """A named slave connection that last acknowledged ``ack`` and is caught up now."""
    return cast(HAConnection, Slave(ack))


def ha_service(log: Log) -> HAService:
    config = MessageStoreConfig(all_ack_in_sync_state_set=True, sync_flush_timeout=2000)
    ha = HAService(cast(CommitLog, log), config, host="127.0.0.1", identities=True)
    ha.in_sync_ids = {MASTER}
    return ha


def report(ha: HAService, conn: HAConnection, offset: int) -> None:
    """What HAConnection's read loop does with a slave's report."""
    conn.ack_offset = offset
    ha.acknowledged(offset)


def test_a_joiner_is_waited_for_from_the_moment_it_is_picked() -> None:
    log = Log(1000)
    ha = ha_service(log)
    conn = slave(ack=900)
    ha.connections.add(conn)
    assert ha.alone_in_sync and ha.replicated(1000)  # alone: acknowledged at once
    floor = ha.begin_join({SLAVE})
    assert floor == 1000  # everything acknowledged so far ends here
    log.max_offset = 1100
    assert not ha.alone_in_sync
    assert not ha.replicated(1000) and not ha.replicated(1100)
    report(ha, conn, 1000)
    assert ha.holding({SLAVE}, floor) == {SLAVE}
    assert ha.replicated(1000) and not ha.replicated(1100)
    ha.leave_join({SLAVE})  # never proposed after all
    assert ha.alone_in_sync and ha.replicated(1100)


async def test_wait_holding_returns_at_the_report_or_the_deadline() -> None:
    log = Log(1000)
    ha = ha_service(log)
    conn = slave(ack=500)
    ha.connections.add(conn)
    floor = ha.begin_join({SLAVE})
    assert await ha.wait_holding({SLAVE}, floor, 0.05) == set()
    waiting = asyncio.ensure_future(ha.wait_holding({SLAVE}, floor, 10))
    await asyncio.sleep(0)
    assert not waiting.done()
    report(ha, conn, 1000)
    assert await asyncio.wait_for(waiting, 5) == {SLAVE}


class Controller:
    """A scripted controller: records ALTER_SYNC_STATE_SET proposals and answers each as
    ``answer`` says (accept, refuse, or raise)."""

    def __init__(self) -> None:
        self.proposed: list[set[int]] = []
        self.answer: Any = "accept"
        self.epoch = 1

    async def invoke(self, code: int, header: Any = None, body: bytes = b"") -> RemotingCommand:
        assert code == RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET
        wanted = SyncStateSet.decode(body).sync_state_set
        self.proposed.append(wanted)
        request = RemotingCommand.request(code)
        if isinstance(self.answer, BaseException):
            raise self.answer
        if self.answer == "refuse":
            return RemotingCommand.response_to(
                request, ResponseCode.CONTROLLER_INVALID_REQUEST, "refused"
            )
        self.epoch += 1
        return RemotingCommand.response_to(request, body=SyncStateSet(wanted, self.epoch).encode())


def master(tmp_path: Path, ha: HAService, controller: Controller) -> ReplicasManager:
    async def unused(*_: Any) -> None:
        raise AssertionError("no role change here")

    m = ReplicasManager(
        BrokerConfig(broker_name="broker-a", controller_addr="127.0.0.1:1"),
        MessageStoreConfig(
            store_path_root_dir=str(tmp_path),
            broker_role=BrokerRole.SYNC_MASTER,
            sync_flush_timeout=2000,
        ),
        client=Any,  # type: ignore[arg-type]  # never used: _invoke is scripted
        ha=ha,
        epochs=EpochFileCache(),
        broker_addr=lambda: "127.0.0.1:20911",
        max_offset=lambda: 0,
        become_master=unused,
        become_slave=unused,
    )
    m.broker_id = m.master_broker_id = MASTER
    m.master_epoch, m.sync_state_set, m.sync_state_set_epoch = 3, {MASTER}, 1
    m._invoke = controller.invoke  # type: ignore[method-assign]
    return m


async def test_a_caught_up_slave_is_proposed_only_once_it_holds_what_was_acknowledged(
    tmp_path: Path,
) -> None:
    log = Log(1000)
    ha = ha_service(log)
    conn = slave(ack=900)  # caught up as of its previous report, not the last 100 bytes
    ha.connections.add(conn)
    controller = Controller()
    m = master(tmp_path, ha, controller)
    check = asyncio.ensure_future(m.check_sync_state_set())
    await until(lambda: ha.joining == {SLAVE}, 5, "the slave picked")
    log.max_offset = 1200  # a send now waits for the joiner as well
    assert not ha.replicated(1200) and controller.proposed == []
    report(ha, conn, 1000)  # it holds everything acknowledged before it was picked
    await asyncio.wait_for(check, 5)
    assert controller.proposed == [{MASTER, SLAVE}]
    assert m.sync_state_set == ha.in_sync_ids == {MASTER, SLAVE} and ha.joining == set()
    assert not ha.replicated(1200)  # the set now holds the slave: it waits for it
    report(ha, conn, 1200)
    assert ha.replicated(1200)


async def test_a_slave_that_does_not_catch_up_in_time_is_not_proposed(tmp_path: Path) -> None:
    log = Log(1000)
    ha = ha_service(log)
    ha.connections.add(slave(ack=900))
    controller = Controller()
    m = master(tmp_path, ha, controller)
    await asyncio.wait_for(m.check_sync_state_set(), 5)  # waits syncFlushTimeout / 2
    assert controller.proposed == [] and ha.joining == set() and ha.alone_in_sync


@pytest.mark.parametrize("outcome", ["timeout", "not-leader"])
async def test_a_proposal_of_unknown_fate_keeps_the_joiner_counted(
    tmp_path: Path, outcome: str
) -> None:
    """No answer (or the controller could not say whether it committed): the controller
    may hold the slave in sync, so acknowledgements go on waiting for it until a later
    proposal is accepted, even one that leaves it out."""
    log = Log(1000)
    ha = ha_service(log)
    conn = slave(ack=1000)
    ha.connections.add(conn)
    controller = Controller()
    controller.answer = (
        TimeoutError()
        if outcome == "timeout"
        else MQBrokerError(ResponseCode.CONTROLLER_NOT_LEADER, "not committed in time")
    )
    m = master(tmp_path, ha, controller)
    await asyncio.wait_for(m.check_sync_state_set(), 5)
    assert controller.proposed == [{MASTER, SLAVE}]
    assert m.sync_state_set == {MASTER} and ha.joining == {SLAVE}
    log.max_offset = 1100
    assert not ha.replicated(1100)  # not alone: the controller may count the slave
    ha.connections.clear()  # the slave goes away
    controller.answer = "accept"
    await asyncio.wait_for(m.check_sync_state_set(), 5)  # proposed again, without it
    assert controller.proposed[-1] == {MASTER}
    assert m.sync_state_set == {MASTER} and ha.joining == set() and ha.replicated(1100)


async def test_a_refused_first_proposal_drops_the_joiner(tmp_path: Path) -> None:
    log = Log(1000)
    ha = ha_service(log)
    ha.connections.add(slave(ack=1000))
    controller = Controller()
    controller.answer = "refuse"
    m = master(tmp_path, ha, controller)
    await asyncio.wait_for(m.check_sync_state_set(), 5)
    assert controller.proposed == [{MASTER, SLAVE}]
    assert ha.joining == set() and ha.alone_in_sync
