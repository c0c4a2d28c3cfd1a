"""The controller's state replicated by Raft, through PySyncObj.

Every controller node holds a :class:`~mqcore.controller.replicas.ReplicasInfoManager`;
its state changes only by event batches that went through the Raft log, applied in log
order on PySyncObj's own thread. :class:`ControllerRaft` is what the request processor
holds: on the leader, :meth:`ControllerRaft.execute` decides a request against the
state and replicates its events before answering, one request at a time (RocketMQ's
event scheduler does the same), and :meth:`ControllerRaft.read` answers reads.

PySyncObj runs its own thread; results cross to asyncio with ``call_soon_threadsafe``.
The journal and snapshots live under ``store_path``, so a controller group restarted as a
whole comes back with its state.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pysyncobj import FAIL_REASON, SyncObj, SyncObjConf, SyncObjConsumer, replicated

from mqcore.controller.config import RaftConfig
from mqcore.controller.events import Event, EventDecodeError, decode_events, encode_events
from mqcore.controller.replicas import ReplicasInfoManager
from mqcore.controller.results import ControllerResult
from mqcore.controller.state import ReplicasState
from mqcore.errors import MQError
from mqcore.protocol.codes import ResponseCode

__all__ = ["ControllerRaft", "ReplicationError"]

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

JOURNAL_FILE = "raft.journal"
SNAPSHOT_FILE = "raft.snapshot"


class ReplicationError(MQError):
    """Events could not be committed (no leader, leadership lost, timeout, or the node
    could not start); the caller answers ``CONTROLLER_NOT_LEADER`` and the broker retries."""

    retriable = True


class _ReplicatedState(SyncObjConsumer):  # type: ignore[misc]
    """The state machine PySyncObj drives: event batches in, applied in log order."""

    def __init__(self, manager: ReplicasInfoManager) -> None:
        # set before the base class looks, so PySyncObj's own snapshot leaves them out:
        # the state goes into snapshots through _serialize, as JSON
        self.manager = manager
        self.lock = threading.Lock()
        super().__init__()

    @replicated  # type: ignore[untyped-decorator]
    def apply_events(self, payload: bytes) -> list[bool]:
        try:
            events = decode_events(payload)
        except EventDecodeError:
            # every node skips the same entry the same way, so they still agree
            log.exception("controller: a Raft log entry is not an event list; skipped")
            return []
        with self.lock:
            return self.manager.apply_all(events)

    def _serialize(self) -> dict[str, bytes]:
        return {"state": self.manager.state.snapshot()}

    def _deserialize(self, data: dict[str, Any]) -> None:
        state = ReplicasState.from_snapshot(data["state"])
        with self.lock:
            self.manager.state = state


def _sync_obj_conf(config: RaftConfig) -> SyncObjConf:
    low, high = config.election_timeout
    options: dict[str, Any] = {
        "raftMinTimeout": low,
        "raftMaxTimeout": high,
        "appendEntriesPeriod": config.heartbeat_period,
        "connectionTimeout": max(3.5, high),
        "connectionRetryTime": config.connection_retry,
        "logCompactionMinEntries": config.snapshot_min_entries,
        "logCompactionMinTime": config.snapshot_min_seconds,
        # no fork to write snapshots: this process runs threads and an event loop
        "useFork": False,
        # one attempt: a taken port is an error to report, not a wait without end
        "maxBindRetries": 1,
        "dynamicMembershipChange": False,
    }
    if config.store_path is not None:
        config.store_path.mkdir(parents=True, exist_ok=True)
        options["journalFile"] = str(config.store_path / JOURNAL_FILE)
        options["fullDumpFile"] = str(config.store_path / SNAPSHOT_FILE)
    return SyncObjConf(**options)


def _settle(future: asyncio.Future[list[bool]], result: object, error: int) -> None:
    if future.done():
        return
    if error == FAIL_REASON.SUCCESS and isinstance(result, list):
        future.set_result(result)
    else:
        future.set_exception(ReplicationError(f"events not committed (reason {error})"))


class ControllerRaft:
    """One controller node: the replicated state and the way to change it.

    :meth:`start` binds the Raft port and joins the group (a one-node group elects
    itself); :meth:`stop` leaves it. Reads are served from this node's copy, which is
    current on the leader (ask :attr:`is_leader` first, as RocketMQ 5 does)."""

    def __init__(self, config: RaftConfig) -> None:
        self.config = config
        self._state = _ReplicatedState(
            ReplicasInfoManager(enable_elect_unclean_master=config.enable_elect_unclean_master)
        )
        self._node: SyncObj | None = None
        self._serial = asyncio.Lock()
        self._caught_up_term: int | None = None

    # -- life ----------------------------------------------------------------------------

    def start(self) -> None:
        """Bind the Raft port and start PySyncObj's thread. Call it on the thread that
        will live as long as the node (the event loop's): PySyncObj stops with the thread
        that started it. :class:`ReplicationError` if the port cannot be bound."""
        if self._node is not None:
            return
        node = SyncObj(
            self.config.self_address,
            list(self.config.others),
            conf=_sync_obj_conf(self.config),
            consumers=[self._state],
        )
        try:
            node.waitBinded()
        except Exception as e:
            node._doDestroy()
            raise ReplicationError(f"cannot bind {self.config.self_address}: {e}") from e
        self._node = node

    async def stop(self) -> None:
        """Leave the group: PySyncObj's thread ends, its sockets and journal close."""
        node, self._node = self._node, None
        if node is not None:
            await asyncio.to_thread(node.destroy_synchronous)

    # -- who leads -----------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self._node is not None and bool(self._node._isLeader())

    @property
    def leader_address(self) -> str | None:
        """The Raft address of the last known leader (``None`` while none is known)."""
        leader = self._node._getLeader() if self._node is not None else None
        return None if leader is None else str(leader.address)

    @property
    def self_address(self) -> str:
        return self.config.self_address

    # -- reads ---------------------------------------------------------------------------

    def read(self, query: Callable[[ReplicasInfoManager], T]) -> T:
        """``query`` run on this node's state, never half way through an applied batch."""
        with self._state.lock:
            return query(self._state.manager)

    @property
    def state(self) -> ReplicasState:
        """A copy of this node's state (for tests and status pages)."""
        return self.read(lambda manager: manager.state.copy())

    # -- changes -------------------------------------------------------------------------

    async def submit(self, events: Sequence[Event], timeout: float = 5.0) -> list[bool]:
        """Replicate ``events`` as one log entry and wait until this node applied it:
        for each event, whether it applied (``False``: fenced off by a newer state).
        A follower forwards the entry to the leader. :class:`ReplicationError` if it is
        not committed within ``timeout`` seconds or the leadership changed meanwhile."""
        node = self._node
        if node is None:
            raise ReplicationError("the controller's Raft node is not running")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[bool]] = loop.create_future()

        def on_applied(result: object, error: int) -> None:  # on PySyncObj's thread
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

        self._state.apply_events(encode_events(events), callback=on_applied)
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise ReplicationError(f"events not committed within {timeout} s") from None

    async def execute(
        self,
        decide: Callable[[ReplicasInfoManager], ControllerResult[R]],
        timeout: float = 5.0,
    ) -> ControllerResult[R]:
        """Decide a request on the leader and make its events true before answering.

        Requests are decided one at a time, each on the state its predecessors left;
        the first in a new term waits until every earlier entry is applied here. Off the
        leader, or when the events could not be committed or were fenced off, the answer
        is ``CONTROLLER_NOT_LEADER`` (the broker looks for the leader and retries)."""
        async with self._serial:
            try:
                await self._catch_up(timeout)
                result = self.read(decide)
                if not result.events:
                    return result
                applied = await self.submit(result.events, timeout)
            except ReplicationError as e:
                # deciding again is free (pure) and gives the answer's shape
                return self.read(decide).refused(ResponseCode.CONTROLLER_NOT_LEADER, str(e))
            if not all(applied):
                return result.refused(
                    ResponseCode.CONTROLLER_NOT_LEADER,
                    "the state changed while the request was replicated; try again",
                )
            return result

    async def _catch_up(self, timeout: float) -> None:
        """On the leader, once per term: an empty entry committed and applied here means
        every entry of earlier terms is applied too, so decisions read the whole state."""
        node = self._node
        if node is None or not node._isLeader():
            raise ReplicationError(
                f"not the controller leader; the leader is {self.leader_address}"
            )
        term = int(node._getTerm())
        if self._caught_up_term != term:
            await self.submit((), timeout)
            self._caught_up_term = term
        if not node._isLeader() or int(node._getTerm()) != term:
            raise ReplicationError("the controller leadership moved")
