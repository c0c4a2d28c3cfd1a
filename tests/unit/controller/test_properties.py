"""Any sequence of requests keeps the controller's invariants, and its events replay.

Requests are drawn at random (valid and not: stale epochs, unknown ids, dead replicas),
each decided against the state with a random set of alive replicas, its events applied.
After every step: at most one master per master epoch, epochs never go down, the master
is in the sync state set, and a replica outside the set is elected only with unclean
election on. At the end, the events replayed on a fresh state, or the snapshot loaded,
give the same state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.controller.elect import LiveBrokers
from mqcore.controller.events import Event, decode_events, encode_events
from mqcore.controller.replicas import ReplicasInfoManager
from mqcore.controller.state import ReplicasState

CLUSTER = "c"
NAMES = ("a", "b")
NAME = st.sampled_from(("a", "a", "a", "b"))  # deep histories for one set, another beside
EVERYONE = frozenset(range(1, 6))
START = [(("register", "a", 0), EVERYONE)] * 3 + [(("elect", "a", 1, False), EVERYONE)]
"""Three replicas and a master to begin with, so that most requests meet a live set."""
IDS = st.integers(min_value=1, max_value=5)

register = st.tuples(st.just("register"), NAME, st.integers(0, 3))
elect = st.tuples(
    st.just("elect"),
    NAME,
    st.one_of(st.integers(min_value=1, max_value=3), st.none()),
    st.booleans(),
)
alter = st.tuples(
    st.just("alter"),
    NAME,
    st.frozensets(st.integers(min_value=1, max_value=3), min_size=1, max_size=3),
    st.booleans(),  # with the current master and epochs
)
clean = st.tuples(st.just("clean"), NAME, st.frozensets(IDS, max_size=2))
# mostly everyone alive, so that requests get past the liveness checks
alive = st.one_of(st.just(EVERYONE), st.frozensets(IDS))
# registering twice as often: the other requests need replicas to act on
request = st.one_of(register, register, elect, elect, alter, alter, alter, clean)
requests = st.lists(st.tuples(request, alive), min_size=5, max_size=40)


@dataclass
class Watch:
    """What was seen of one broker set since it was (re)created."""

    masters_by_epoch: dict[int, int | None] = field(default_factory=dict)
    master_epoch: int = 0
    sync_state_set_epoch: int = 0


def decide(
    manager: ReplicasInfoManager, request: tuple[object, ...], liveness: LiveBrokers
) -> list[Event]:
    """Decide ``request`` and apply its events (a new replica registers in two steps, the
    second decided on the first's outcome); the events, in the order applied."""
    events = _decide(manager, request, liveness)
    manager.apply_all(events)
    return events


def _decide(
    manager: ReplicasInfoManager, request: tuple[object, ...], liveness: LiveBrokers
) -> list[Event]:
    kind, name = request[0], request[1]
    assert isinstance(name, str)
    if kind == "register":
        token = request[2]
        next_id = manager.get_next_broker_id(CLUSTER, name).response.next_broker_id
        code = f"10.0.0.{next_id}:10911;{token}"
        applied = manager.apply_broker_id(CLUSTER, name, next_id, code)
        manager.apply_all(applied.events)
        registered = manager.register_broker(CLUSTER, name, next_id, code.split(";")[0], liveness)
        # the caller applies them all again: an id applied twice by its owner is a no-op
        return list(applied.events) + list(registered.events)
    if kind == "elect":
        broker_id, designate = request[2], request[3]
        assert broker_id is None or isinstance(broker_id, int)
        return list(
            manager.elect_master(name, broker_id, liveness, designate_elect=bool(designate)).events
        )
    if kind == "alter":
        members, current = request[2], request[3]
        assert isinstance(members, frozenset)
        broker_set = manager.state.get(name)
        if current and broker_set is not None and broker_set.master_id is not None:
            master, epochs = broker_set.master_id, broker_set.master_epoch
            set_epoch = broker_set.sync_state_set_epoch
        else:
            master, epochs, set_epoch = 1, 1, 1
        return list(
            manager.alter_sync_state_set(name, master, epochs, members, set_epoch, liveness).events
        )
    members = request[2]
    assert isinstance(members, frozenset)
    ids = ";".join(str(i) for i in sorted(members)) or None
    return list(manager.clean_broker_data(CLUSTER, name, ids, liveness).events)


def check(manager: ReplicasInfoManager, watches: dict[str, Watch]) -> None:
    for name in NAMES:
        broker_set = manager.state.get(name)
        if broker_set is None:
            watches.pop(name, None)
            continue
        watch = watches.setdefault(name, Watch())
        assert broker_set.master_epoch >= watch.master_epoch
        assert broker_set.sync_state_set_epoch >= watch.sync_state_set_epoch
        seen = watch.masters_by_epoch.setdefault(broker_set.master_epoch, broker_set.master_id)
        assert seen == broker_set.master_id, "two masters in one epoch"
        watch.master_epoch = broker_set.master_epoch
        watch.sync_state_set_epoch = broker_set.sync_state_set_epoch
        if broker_set.master_id is not None:
            assert broker_set.master_id in broker_set.sync_state_set
            assert broker_set.master_id in broker_set.replicas
        assert broker_set.sync_state_set <= broker_set.replicas.keys()
        assert all(broker_id < broker_set.next_broker_id for broker_id in broker_set.replicas)


@settings(max_examples=150, deadline=None)
@given(requests=requests, unclean=st.booleans())
def test_any_sequence_of_requests_keeps_the_invariants(
    requests: list[tuple[tuple[object, ...], frozenset[int]]], unclean: bool
) -> None:
    manager = ReplicasInfoManager(enable_elect_unclean_master=unclean)
    watches: dict[str, Watch] = {}
    log: list[Event] = []
    for request, living in START + requests:
        liveness = LiveBrokers.everyone({name: living for name in NAMES}, CLUSTER)
        before = {name: manager.state.get(name) for name in NAMES}
        in_sync = {n: set(b.sync_state_set) for n, b in before.items() if b is not None}
        first = {n: b.master_epoch == 0 for n, b in before.items() if b is not None}
        old_masters = {n: b.master_id for n, b in before.items() if b is not None}
        events = decide(manager, request, liveness)
        log.extend(events)
        for event in events:
            new_master = getattr(event, "new_master_id", None)
            name = getattr(event, "broker_name", "")
            if new_master is not None and new_master != old_masters.get(name):
                assert unclean or first[name] or new_master in in_sync[name], (
                    "an out-of-sync replica elected with unclean election off"
                )
        check(manager, watches)

    replayed = ReplicasInfoManager()
    replayed.apply_all(decode_events(encode_events(log)))
    assert replayed.state == manager.state
    assert ReplicasState.from_snapshot(manager.state.snapshot()) == manager.state
    assert replayed.state.snapshot() == manager.state.snapshot()
