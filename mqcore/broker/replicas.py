"""`ReplicasManager`: a broker in controller mode (RocketMQ 5's ReplicasManager).

With ``enableControllerMode`` the controllers, not ``brokerRole``, say who is master:

- At start the broker finds the controller leader (the one of ``controllerAddr`` whose
  GET_METADATA_INFO says ``isLeader``), takes a broker id (GET_NEXT_BROKER_ID and
  APPLY_BROKER_ID once, then the id kept in ``<storePathRootDir>/brokerIdentity``),
  registers, and follows the master the controller names, or asks to be elected when
  there is none. It starts as a slave: nothing is written before the controller says so.
- Every ``brokerHeartbeatInterval`` it tells the leader it is alive, with its epoch and
  log end; every ``syncBrokerMetadataPeriod`` it reads its replica info and follows a
  change it missed; NOTIFY_BROKER_ROLE_CHANGED brings a change at once.
- Becoming master starts a new epoch at this log's end (``epochFileCheckpoint``); a
  master reports its in-sync set every ``checkSyncStateSetPeriod`` (named slaves that
  caught up within ``haMaxTimeSlaveNotCatchup``).
- Becoming a slave, it keeps what it holds only up to where its epochs and the new
  master's agree: the HA client truncates there (the dropped records are kept in
  ``ha-truncated/``), so a returning old master drops what no other replica has.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from mqcore.broker.config import BrokerConfig
from mqcore.broker.ha.master import HAService
from mqcore.broker.services import Service, Timers, periodic
from mqcore.common.files import write_atomically
from mqcore.errors import MQBrokerError, MQError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.controller import EpochEntry, EpochEntryCache, SyncStateSet
from mqcore.protocol.bodies.route import KVTable
from mqcore.protocol.headers import CommandHeader
from mqcore.protocol.headers.controller import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    ElectMasterRequestHeader,
    ElectMasterResponseHeader,
    GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader,
    NotifyBrokerRoleChangedRequestHeader,
    RegisterBrokerToControllerRequestHeader,
    RegisterBrokerToControllerResponseHeader,
)
from mqcore.remoting import Channel, Processor, RemotingClient
from mqcore.store.epoch_file import EpochEntry as StoreEpochEntry
from mqcore.store.epoch_file import EpochFileCache
from mqcore.store.store_config import BrokerRole, MessageStoreConfig

__all__ = ["BROKER_IDENTITY_FILE", "ReplicasManager"]

log = logging.getLogger("mq.broker.replicas")

BROKER_IDENTITY_FILE = "brokerIdentity"
"""RocketMQ 5's ``storePathBrokerIdentity`` default name, under the store root."""
_TIMEOUT = 3.0


class ReplicasManager:
    """One broker's dealings with the controllers; see the module docstring."""

    def __init__(
        self,
        config: BrokerConfig,
        store_config: MessageStoreConfig,
        *,
        client: RemotingClient,
        ha: HAService,
        epochs: EpochFileCache,
        broker_addr: Callable[[], str],
        max_offset: Callable[[], int],
        become_master: Callable[[BrokerRole], Awaitable[None]],
        become_slave: Callable[[int, str | None], Awaitable[None]],
        stamp_epoch: Callable[[int], None] | None = None,
    ) -> None:
        """``stamp_epoch``: puts a new master epoch into the topic table's data version
        (what name servers compare when two brokers claim to be master)."""
        self.config = config
        self.store_config = store_config
        self.client = client
        self.ha = ha
        self.epochs = epochs
        self.broker_addr = broker_addr
        self.max_offset = max_offset
        self._become_master = become_master
        self._become_slave = become_slave
        self._stamp_epoch = stamp_epoch
        self.broker_id: int | None = None
        """This replica's id at the controller (``brokerId`` says 0 while it is master)."""
        self.leader: str | None = None
        self.master_broker_id: int | None = None
        self.master_address: str | None = None
        self.master_epoch = 0
        self.sync_state_set: set[int] = set()
        self.sync_state_set_epoch = 0
        self._unserved_master: str | None = None
        """A master followed before it served replication (told of its role after this
        replica was): followed again, by the periodic sync, once it serves."""
        self._unsettled = False
        """An in-sync set proposal whose fate is unknown (no answer, or the controller
        could not say whether it committed): its joiners stay counted until a later
        proposal is accepted, since the controller may hold them in sync."""
        self._set_lock = asyncio.Lock()
        """The set check and the replica info sync both write the in-sync set; one at a
        time, so an older read never replaces a newer acceptance."""

    @property
    def identity_path(self) -> Path:
        return self.store_config.root / BROKER_IDENTITY_FILE

    @property
    def is_master(self) -> bool:
        return self.broker_id is not None and self.master_broker_id == self.broker_id

    # -- the controllers ---------------------------------------------------------------
    async def _invoke(
        self, code: int, header: CommandHeader | None = None, body: bytes = b""
    ) -> RemotingCommand:
        """A request to the controller leader (found first if unknown); MQError on a
        refusal, OSError/TimeoutError when none answers."""
        if self.leader is None:
            await self.find_leader()
        if self.leader is None:
            raise MQBrokerError(ResponseCode.CONTROLLER_NOT_LEADER, "no controller leader known")
        ext = header.to_ext_fields() if header is not None else None
        request = RemotingCommand.request(code, ext, body)
        response = await self.client.invoke(self.leader, request, _TIMEOUT)
        if response.code == ResponseCode.CONTROLLER_NOT_LEADER:
            self.leader = None
        return response

    async def find_leader(self) -> str | None:
        for addr in self.config.controller_addrs:
            try:
                request = RemotingCommand.request(RequestCode.CONTROLLER_GET_METADATA_INFO)
                response = await self.client.invoke(addr, request, _TIMEOUT)
            except (OSError, TimeoutError, MQError):
                continue
            if GetMetaDataResponseHeader.from_command(response).is_leader:
                if self.leader != addr:
                    log.info("controller leader is %s", addr)
                self.leader = addr
                return addr
        self.leader = None
        return None

    # -- start: an id, registration, the master --------------------------------------
    async def start(self) -> None:
        """Take an id and register; follow the master or ask to be elected. A controller
        that does not answer yet is retried by the periodic sync."""
        try:
            await self._ensure_broker_id()
            await self.register()
        except (OSError, TimeoutError, MQError) as exc:
            log.warning("controller registration failed (retried): %s", exc)

    def _load_identity(self) -> int | None:
        try:
            text = self.identity_path.read_text().strip()
        except FileNotFoundError:
            return None
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "brokerId" and value.strip().isdigit():
                return int(value)
        return None

    async def _ensure_broker_id(self) -> None:
        if self.broker_id is not None:
            return
        kept = self._load_identity()
        if kept is not None:
            self.broker_id = kept
            return
        c = self.config
        response = await self._invoke(
            RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
            GetNextBrokerIdRequestHeader(c.broker_cluster_name, c.broker_name),
        )
        _ok(response)
        wanted = GetNextBrokerIdResponseHeader.from_command(response).next_broker_id
        if wanted is None:
            raise MQBrokerError(ResponseCode.CONTROLLER_BROKER_ID_INVALID, "no broker id named")
        check = f"{self.broker_addr()};{secrets.token_hex(8)}"
        response = await self._invoke(
            RequestCode.CONTROLLER_APPLY_BROKER_ID,
            ApplyBrokerIdRequestHeader(c.broker_cluster_name, c.broker_name, wanted, check),
        )
        _ok(response)
        write_atomically(
            self.identity_path,
            f"brokerClusterName={c.broker_cluster_name}\nbrokerName={c.broker_name}\n"
            f"brokerId={wanted}\n".encode(),
        )
        self.broker_id = wanted
        log.info("broker id %d given by the controller", wanted)

    async def register(self) -> None:
        c = self.config
        assert self.broker_id is not None
        response = await self._invoke(
            RequestCode.CONTROLLER_REGISTER_BROKER,
            RegisterBrokerToControllerRequestHeader(
                c.broker_cluster_name, c.broker_name, self.broker_id, self.broker_addr()
            ),
        )
        _ok(response)
        # Alive before anything is decided about us (RocketMQ 5 beats once here too): a
        # restarted old master asking to be elected must be seen alive, or the first
        # scan elects another replica.
        await self.send_heartbeat()
        h = RegisterBrokerToControllerResponseHeader.from_command(response)
        if h.master_broker_id is not None and h.master_address:
            await self._follow(h.master_broker_id, h.master_address, h.master_epoch or 0, response)
        else:
            await self.elect()

    async def elect(self) -> None:
        """Ask to be master (the controller picks among the in-sync replicas)."""
        c = self.config
        assert self.broker_id is not None
        response = await self._invoke(
            RequestCode.CONTROLLER_ELECT_MASTER,
            ElectMasterRequestHeader.of_broker_trigger(
                c.broker_cluster_name, c.broker_name, self.broker_id
            ),
        )
        if response.code not in (ResponseCode.SUCCESS, ResponseCode.CONTROLLER_MASTER_STILL_EXIST):
            log.info("election refused: %s %s", response.code, response.remark)
            return
        h = ElectMasterResponseHeader.from_command(response)
        if h.master_broker_id is not None and h.master_address:
            await self._follow(h.master_broker_id, h.master_address, h.master_epoch or 0, None)

    async def _follow(
        self, master_id: int, master_address: str, epoch: int, response: RemotingCommand | None
    ) -> None:
        sync = (
            SyncStateSet.decode(response.body) if response is not None and response.body else None
        )
        if master_id == self.broker_id:
            await self.change_to_master(
                epoch,
                sync.sync_state_set_epoch if sync else 0,
                set(sync.sync_state_set) if sync else {master_id},
            )
        else:
            await self.change_to_slave(master_address, epoch, master_id)

    # -- role changes ---------------------------------------------------------------------
    async def change_to_master(self, epoch: int, set_epoch: int, sync_set: set[int]) -> None:
        if epoch <= self.master_epoch and self.is_master:
            return
        self.master_epoch = epoch
        if self._stamp_epoch is not None:
            self._stamp_epoch(epoch)
        self.sync_state_set, self.sync_state_set_epoch = set(sync_set), set_epoch
        self.ha.in_sync_ids = set(self.sync_state_set)
        self._settle()
        self.master_broker_id, self.master_address = self.broker_id, self.broker_addr()
        self._unserved_master = None
        if self.store_config.broker_role is BrokerRole.SLAVE:
            await self._become_master(BrokerRole.SYNC_MASTER)
        self.epochs.append(epoch, self.max_offset())
        log.warning("master of %s at epoch %d", self.config.broker_name, epoch)

    async def change_to_slave(self, master_address: str, epoch: int, master_id: int) -> None:
        if epoch < self.master_epoch or (
            epoch == self.master_epoch and master_id == self.master_broker_id
        ):
            return
        self.master_epoch = epoch
        if self._stamp_epoch is not None:
            self._stamp_epoch(epoch)
        self.master_broker_id, self.master_address = master_id, master_address
        self.ha.fence()  # before anything else: no send waiting here is acknowledged now
        self.ha.in_sync_ids = None
        self._settle()
        assert self.broker_id is not None
        # Asked before following: a master that does not serve replication yet gives no
        # HA address to follow, and nothing else would name it again for this epoch.
        served = await self._serves_replication(master_address)
        await self._become_slave(self.broker_id, master_address)
        self._unserved_master = None if served else master_address
        log.warning("slave of %s (broker %d) at epoch %d", master_address, master_id, epoch)

    async def _serves_replication(self, address: str) -> bool:
        """Does the broker at ``address`` say where it serves replication (a master's
        ``haServerAddr`` runtime key)?"""
        request = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
        try:
            response = await self.client.invoke(address, request, _TIMEOUT)
        except (OSError, TimeoutError, MQError):
            return False
        if response.code != ResponseCode.SUCCESS or not response.body:
            return False
        return bool(KVTable.decode(response.body).table.get("haServerAddr"))

    # -- periodic work ---------------------------------------------------------------------
    async def send_heartbeat(self) -> None:
        if self.broker_id is None or self.leader is None:
            return
        c = self.config
        header = BrokerHeartbeatRequestHeader(
            cluster_name=c.broker_cluster_name,
            broker_addr=self.broker_addr(),
            broker_name=c.broker_name,
            broker_id=self.broker_id,
            epoch=self.epochs.last_epoch if self.epochs.last_epoch >= 0 else 0,
            max_offset=self.max_offset(),
            confirm_offset=self.max_offset(),
            heartbeat_timeout_mills=c.controller_heart_beat_timeout_mills,
            election_priority=c.broker_election_priority,
        )
        request = RemotingCommand.request(
            RequestCode.BROKER_HEARTBEAT, header.to_ext_fields(), oneway=True
        )
        try:
            await self.client.invoke_oneway(self.leader, request)
        except (OSError, MQError) as exc:
            log.info("heartbeat to controller %s failed: %s", self.leader, exc)
            self.leader = None

    async def sync_broker_metadata(self) -> None:
        """Read this broker name's replica info and follow a change not yet seen."""
        async with self._set_lock:
            await self._sync_broker_metadata()

    async def _sync_broker_metadata(self) -> None:
        try:
            if self.broker_id is None:
                await self.start()
                return
            response = await self._invoke(
                RequestCode.CONTROLLER_GET_REPLICA_INFO,
                GetReplicaInfoRequestHeader(self.config.broker_name),
            )
            if response.code == ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST:
                await self.register()
                return
            _ok(response)
            info = GetReplicaInfoResponseHeader.from_command(response)
            epoch = info.master_epoch or 0
            if info.master_broker_id is None or not info.master_address:
                await self.elect()
            elif epoch > self.master_epoch:
                await self._follow(info.master_broker_id, info.master_address, epoch, response)
            elif (
                self._unserved_master is not None
                and info.master_address == self._unserved_master
                and await self._serves_replication(self._unserved_master)
            ):
                assert self.broker_id is not None
                log.info("master %s serves replication now: following it", self._unserved_master)
                await self._become_slave(self.broker_id, self._unserved_master)
                self._unserved_master = None
            elif self.is_master and response.body:
                sync = SyncStateSet.decode(response.body)
                self.sync_state_set = set(sync.sync_state_set)
                self.sync_state_set_epoch = sync.sync_state_set_epoch
                self.ha.in_sync_ids = set(self.sync_state_set)
        except (OSError, TimeoutError, MQError) as exc:
            log.info("replica info from the controller failed: %s", exc)

    async def check_sync_state_set(self) -> None:
        """A master proposes its in-sync set when it changed: itself and the named slaves
        that caught up within ``haMaxTimeSlaveNotCatchup``.

        A slave joins only once it holds every message acknowledged so far: from the
        moment it is picked, acknowledgements wait for it too (``HAService.begin_join``),
        and it is proposed once it holds this log's end as of that moment. Otherwise the
        controller could elect a replica that lacks a message the set acknowledged just
        before it joined."""
        if not self.is_master or self.broker_id is None:
            return
        async with self._set_lock:
            await self._check_sync_state_set(self.broker_id)

    async def _check_sync_state_set(self, broker_id: int) -> None:
        epoch = self.master_epoch
        wanted = {broker_id} | self.ha.in_sync_slaves(
            _now_ms(), self.store_config.ha_max_time_slave_not_catchup
        )
        if wanted == self.sync_state_set and not self._unsettled:
            return
        joiners = wanted - self.sync_state_set - self.ha.joining
        if joiners:
            floor = self.ha.begin_join(self.ha.joining | joiners)
            wait = self.store_config.sync_flush_timeout / 2000
            held = await self.ha.wait_holding(joiners, floor, wait)
            if held != joiners:  # never proposed: they need not be waited for
                late = joiners - held
                log.info("slaves %s did not reach %d in %.1f s", sorted(late), floor, wait)
                wanted -= late
                self.ha.leave_join(late)
            if not self.is_master or self.master_epoch != epoch:
                return  # the role changed meanwhile, which settled the set
            if wanted == self.sync_state_set and not self._unsettled:
                self._settle()
                return
        try:
            response = await self._invoke(
                RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
                AlterSyncStateSetRequestHeader(
                    self.config.broker_name, broker_id, self.master_epoch
                ),
                SyncStateSet(wanted, self.sync_state_set_epoch).encode(),
            )
            _ok(response)
        except MQBrokerError as exc:
            if exc.code != ResponseCode.CONTROLLER_NOT_LEADER and not self._unsettled:
                self._settle()  # decided and refused: nothing changed at the controller
            else:
                self._unsettled = True
            log.info("in-sync set %s not accepted: %s", sorted(wanted), exc)
            return
        except (OSError, TimeoutError, MQError) as exc:
            self._unsettled = True
            log.info("in-sync set %s not accepted: %s", sorted(wanted), exc)
            return
        accepted = SyncStateSet.decode(response.body) if response.body else None
        if accepted is not None:
            self.sync_state_set = set(accepted.sync_state_set)
            self.sync_state_set_epoch = accepted.sync_state_set_epoch
            self.ha.in_sync_ids = set(self.sync_state_set)
            self._settle()
        else:
            self._unsettled = True  # accepted, but as what is not said
        log.info("in-sync set of %s: %s", self.config.broker_name, sorted(self.sync_state_set))

    def _settle(self) -> None:
        """The controller's in-sync set is known again: acknowledgements wait for it
        alone."""
        self._unsettled = False
        self.ha.end_join()

    # -- how a broker runs it ----------------------------------------------------------
    def services(self, timers: Timers) -> list[Service]:
        """Registration at start, then the heartbeat, the replica info sync, the leader
        lookup and (on a master) the in-sync set check, on RocketMQ 5's periods."""
        c = self.config
        return [
            Service("controller-register", self.start),
            periodic(
                timers, "controller-heartbeat", c.broker_heartbeat_interval, self.send_heartbeat
            ),
            periodic(
                timers,
                "controller-replica-info",
                c.sync_broker_metadata_period,
                self.sync_broker_metadata,
            ),
            periodic(
                timers, "controller-leader", c.sync_controller_metadata_period, self.find_leader
            ),
            periodic(
                timers, "sync-state-check", c.check_sync_state_set_period, self.check_sync_state_set
            ),
        ]

    def handlers(self) -> dict[int, Processor]:
        """What the controller and the other replicas ask of this broker."""
        return {
            RequestCode.NOTIFY_BROKER_ROLE_CHANGED: self.on_role_changed,
            RequestCode.GET_BROKER_EPOCH_CACHE: self.get_epoch_cache,
        }

    # -- what the controller and the replicas ask of this broker ----------------------
    async def on_role_changed(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """NOTIFY_BROKER_ROLE_CHANGED: follow the new master at once."""
        h = NotifyBrokerRoleChangedRequestHeader.from_command(request)
        if h.master_broker_id is not None and h.master_address and h.master_epoch is not None:
            try:
                await self._follow(h.master_broker_id, h.master_address, h.master_epoch, request)
            except (OSError, MQError) as exc:
                log.warning("role change to epoch %s failed: %s", h.master_epoch, exc)
        return RemotingCommand.response_to(request)

    def epoch_cache(self) -> EpochEntryCache:
        """GET_BROKER_EPOCH_CACHE's body: this broker's epochs and log end."""
        end = self.max_offset()
        self.epochs.set_last_end(end)
        return EpochEntryCache(
            self.config.broker_cluster_name,
            self.config.broker_name,
            self.broker_id or 0,
            [EpochEntry(e.epoch, e.start_offset, e.end_offset) for e in self.epochs.entries],
            end,
        )

    def get_epoch_cache(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(request, body=self.epoch_cache().encode())

    async def consistent_point(self, master_address: str) -> int | None:
        """Where this log and the master's agree (from both epoch caches): a slave that
        holds more truncates there. None when the master cannot say."""
        request = RemotingCommand.request(RequestCode.GET_BROKER_EPOCH_CACHE)
        response = await self.client.invoke(master_address, request, _TIMEOUT)
        if response.code != ResponseCode.SUCCESS:
            return None
        theirs = EpochEntryCache.decode(response.body)
        other = EpochFileCache()
        other.replace([_store_entry(e) for e in theirs.epoch_list])
        other.set_last_end(theirs.max_offset)
        self.epochs.set_last_end(self.max_offset())
        point = self.epochs.find_consistent_point(other)
        if point < 0 and self.epochs.entries:
            return None  # no epoch in common: nothing proves which bytes agree
        if point < 0:
            point = theirs.max_offset  # no epochs here (a fresh or 4.x store): 4.x's rule
        # from here on this log follows the master's: its epochs are ours
        self.epochs.replace(other.entries)
        return point


def _store_entry(entry: EpochEntry) -> StoreEpochEntry:
    return StoreEpochEntry(entry.epoch, entry.start_offset)


def _ok(response: RemotingCommand) -> None:
    if response.code != ResponseCode.SUCCESS:
        raise MQBrokerError(response.code, response.remark)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
