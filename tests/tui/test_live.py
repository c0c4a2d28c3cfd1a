"""The dashboard against a real name server and brokers (in-process, 127.0.0.1 port 0)."""

from __future__ import annotations

from pathlib import Path

from pilot_support import poll, wait_until
from textual.widgets import Input

from mqcli.tui.app import MQApp
from mqcli.tui.dialogs.confirm_name import ConfirmByName
from mqcli.tui.model import UNKNOWN_STATE
from mqcli.tui.widgets.delay_levels import DelayLevels
from mqcli.tui.widgets.live_table import LiveTable
from mqcli.tui.widgets.message_detail import MessageDetail
from mqcli.tui.widgets.status_bar import StatusBar
from mqcore.broker.controller import BrokerController
from mqcore.client import Admin, Producer, make_message
from mqcore.message import MessageExt
from mqcore.protocol.bodies import MessageQueue
from mqcore.store.metadata import PERM_READ, PERM_WRITE
from tests.support.inproc import LiveCluster
from tests.support.polling import until

SCHEDULE = "SCHEDULE_TOPIC_XXXX"


def store_put(broker: BrokerController, topic: str, queue_id: int, props: dict[str, str]) -> None:
    """Append straight to the store (for what no client may send: DLQ, schedule queues)."""
    msg = MessageExt(
        topic=topic,
        body=b"dead letter body",
        properties={"TAGS": "TagA", **props},
        queue_id=queue_id,
        born_timestamp=1_700_000_000_000,
        born_host=("127.0.0.1", 50000),
        store_host=("127.0.0.1", broker.server.port),
    )
    assert broker.store.put_message(msg).ok


async def seed(cluster: LiveCluster) -> None:
    """Orders: 10 messages over 4 queues (3, 3, 2, 2); g1 consumed 3, 1, 0, 2 (lag 4);
    3 messages at delay level 18 (2 h: nothing is delivered during the test)."""
    async with Admin(cluster.addr) as admin:
        await admin.create_topic("Orders", queues=4)
        await admin.create_topic("Later", queues=1)
        await cluster.wait_route("Orders")
        await cluster.wait_route("Later")
        async with Producer("p-tui", cluster.addr) as producer:
            for i in range(10):
                mq = MessageQueue("Orders", "broker-a", i % 4)
                await producer.send(
                    make_message("Orders", f"order {i}", keys=f"order-{i}"), queue=mq
                )
            for i in range(3):
                await producer.send(make_message("Later", f"later {i}", delay_level=18))
        await admin.create_subscription_group("g1")
        offsets = {MessageQueue("Orders", "broker-a", q): o for q, o in enumerate((3, 1, 0, 2))}
        await admin.apply_reset("g1", offsets)
    broker = cluster.brokers["broker-a"]
    if broker.store.get_max_offset_in_queue(SCHEDULE, 17) <= 0:
        # the schedule service has not landed: park them where it would
        for _ in range(3):
            store_put(broker, SCHEDULE, 17, {"DELAY": "18", "REAL_TOPIC": "Later", "REAL_QID": "0"})


async def test_views_show_depth_lag_delay_and_lookups(tmp_path: Path) -> None:
    async with LiveCluster(tmp_path).running("broker-a") as cluster:
        await seed(cluster)
        app = MQApp(cluster.addr, refresh=0)
        async with app.run_test(size=(200, 50)) as pilot:
            await poll(pilot)
            brokers = app.screen.query_one("#brokers", LiveTable)
            row = brokers.get_row("broker-a/0")
            assert row[3] == "async master" and str(row[5]) == "up"  # its brokerRole
            assert int(row[10].replace(",", "")) >= 13  # put today

            await pilot.press("2")
            topics = app.screen.query_one("#topics", LiveTable)
            await wait_until(pilot, lambda: "Orders" in [r.key.value for r in topics.ordered_rows])
            assert topics.get_row("Orders")[4] == "10"
            topics.move_cursor(row=topics.get_row_index("Orders"))
            await pilot.pause()
            queues = app.screen.query_one("#queues", LiveTable)
            assert [queues.get_row(f"broker-a/{q}")[4] for q in range(4)] == ["3", "3", "2", "2"]

            # more messages: the same row is patched in place, the cursor stays on it
            async with Producer("p-tui2", cluster.addr) as producer:
                for _ in range(2):
                    await producer.send(make_message("Orders", "more"))
            await poll(pilot)
            assert topics.highlighted_key == "Orders"
            assert topics.get_row("Orders")[4] == "12"

            await pilot.press("3")
            groups = app.screen.query_one("#groups", LiveTable)
            await wait_until(pilot, lambda: "g1" in [r.value for r in groups.rows])
            groups.move_cursor(row=groups.get_row_index("g1"))
            await pilot.pause()
            g1 = groups.get_row("g1")
            assert g1[4].plain == str(3 - 3 + 3 - 1 + 2 - 0 + 2 - 2 + 2)  # +2 new, unconsumed
            detail = app.screen.query_one("#group-queues", LiveTable)
            await wait_until(pilot, lambda: detail.row_count == 4, what="g1's queues")
            assert detail.get_row("Orders/broker-a/1")[4] == "1"

            await pilot.press("4")
            await poll(pilot)
            levels = app.screen.query_one(DelayLevels)
            await wait_until(pilot, lambda: levels.waiting("broker-a", 18) == 3, what="L18")
            assert levels.waiting("broker-a", 1) == 0
            # the next due message: its store time plus the level's 2 h
            snap = app.snapshot
            assert snap is not None
            (l18,) = [r for r in snap.delay_levels if r.level == 18]
            assert l18.next_due_ms is not None
            assert l18.delivery_rate == 0.0  # published by the broker, nothing delivered
            assert 7_100_000 < l18.next_due_ms - snap.taken_ms <= 7_200_000

            await pilot.press("5")  # the topic box has the focus on entering
            for ch in "Orders":
                await pilot.press(ch)
            await pilot.press("enter")
            assert app.focused is app.screen.query_one("#query", Input)
            for ch in "key:order-7":
                await pilot.press(ch)
            await pilot.press("enter")
            results = app.screen.query_one("#results", LiveTable)
            await wait_until(pilot, lambda: results.row_count == 1, what="key lookup")
            msg = app.screen.query_one(MessageDetail).message
            assert msg is not None and msg.keys == ["order-7"] and msg.body == b"order 7"

            query = app.screen.query_one("#query", Input)
            for text, count in ((f"id:{msg.msg_id}", 1), ("time:-1h..now", 12)):
                query.value = text
                query.focus()
                await pilot.press("enter")
                await wait_until(
                    pilot,
                    lambda text=text, count=count: (
                        results.row_count == count
                        and text.split(":")[1] in str(results.border_title)
                    ),
                    what=text,
                )
            by_id = app.screen.query_one(MessageDetail).message
            assert by_id is not None and by_id.topic == "Orders"


async def test_a_broker_stopped_mid_run_shows_as_down(tmp_path: Path) -> None:
    async with LiveCluster(tmp_path).running("broker-a", "broker-b") as cluster:
        app = MQApp(cluster.addr, refresh=0)
        toasts: list[str] = []
        async with app.run_test(size=(160, 40)) as pilot:
            app.notify = lambda message, **kw: toasts.append(str(message))  # type: ignore[method-assign]
            await poll(pilot)
            brokers = app.screen.query_one("#brokers", LiveTable)
            assert str(brokers.get_row("broker-b/0")[5]) == "up"
            await cluster.brokers.pop("broker-b").shutdown()
            await poll(pilot)
            await wait_until(pilot, lambda: str(brokers.get_row("broker-b/0")[5]) == "DOWN")
            assert str(brokers.get_row("broker-a/0")[5]) == "up"
            assert any("broker-b/0 is down" in t for t in toasts)
            assert app.is_running
            await pilot.press("2")  # other views still render
            await poll(pilot)
            # and with the name server gone: the running broker is "unknown", not DOWN
            # (it still serves clients with a cached route), no crash
            assert cluster.namesrv is not None
            await cluster.namesrv.shutdown()
            cluster.namesrv = None
            await pilot.press("1")
            await poll(pilot)
            snap = app.snapshot
            assert snap is not None and not snap.connected and snap.brokers_unknown
            assert all(b.unknown for b in snap.brokers) and snap.brokers_down == []
            assert UNKNOWN_STATE in toasts
            assert UNKNOWN_STATE in str(app.screen.query_one(StatusBar).render())
            assert str(brokers.get_row("broker-a/0")[5]) == "unknown"
            assert not any("broker-a/0 is down" in t for t in toasts)


async def test_dead_letters_browse_and_resend_after_typing_the_group(tmp_path: Path) -> None:
    async with LiveCluster(tmp_path).running("broker-a") as cluster:
        async with Admin(cluster.addr) as admin:
            await admin.create_topic("Orders", queues=1)
            await cluster.wait_route("Orders")
        broker = cluster.brokers["broker-a"]
        broker.topics.create_in_send_back("%DLQ%g1", 1, PERM_READ | PERM_WRITE)
        for i in range(2):
            store_put(broker, "%DLQ%g1", 0, {"RETRY_TOPIC": "Orders", "KEYS": f"dead-{i}"})
        app = MQApp(cluster.addr, refresh=0, view="dlq")
        async with app.run_test(size=(200, 50)) as pilot:
            await poll(pilot)
            groups = app.screen.query_one("#dlq-groups", LiveTable)
            await wait_until(pilot, lambda: groups.row_count == 1, what="DLQ listed")
            assert groups.get_row("g1")[2] == "2"
            groups.focus()
            await pilot.press("enter")
            messages = app.screen.query_one("#dlq-messages", LiveTable)
            await wait_until(pilot, lambda: messages.row_count == 2, what="dead letters")
            assert messages.get_row(next(iter(messages.rows)).value or "")[-1] == "Orders"
            await pilot.press("E")
            assert isinstance(app.screen, ConfirmByName)
            for ch in "g1":
                await pilot.press(ch)
            await pilot.press("enter")
            assert not isinstance(app.screen, ConfirmByName)
            await wait_until(
                pilot,
                lambda: broker.store.get_max_offset_in_queue("Orders", 0) == 2,
                what="resent to Orders",
            )


async def test_group_model_comes_from_the_live_consumers(tmp_path: Path) -> None:
    """BROADCASTING/CLUSTERING as the consumers report it; "-" with nobody online, even
    for a group whose config allows broadcasting."""
    from mqcli.tui.poller import ClusterPoller
    from mqcore.client import ConsumeStatus, PushConsumer
    from mqcore.client.rebalance import MessageModel
    from mqcore.common.metadata import SubscriptionGroupConfig

    async with LiveCluster(tmp_path).running("broker-a") as cluster:
        async with Admin(cluster.addr) as admin:
            await admin.create_topic("Orders", queues=2)
            await cluster.wait_route("Orders")
            await admin.create_subscription_group(
                SubscriptionGroupConfig("g-idle", consume_broadcast_enable=True)
            )
        consumers = {
            "g-bc": PushConsumer("g-bc", namesrv=cluster.addr, instance_name="tui-bc",
                                 message_model=MessageModel.BROADCASTING,
                                 offset_store_dir=str(tmp_path / "offsets")),
            "g-cl": PushConsumer("g-cl", namesrv=cluster.addr, instance_name="tui-cl"),
        }  # fmt: skip
        poller = ClusterPoller(cluster.addr, model_interval=0)
        try:
            for consumer in consumers.values():
                consumer.subscribe("Orders", "*")
                consumer.register_listener(lambda msgs, ctx: ConsumeStatus.CONSUME_SUCCESS)
                await consumer.start()
            want = {"g-bc": "BROADCASTING", "g-cl": "CLUSTERING", "g-idle": "-"}
            got: dict[str, str] = {}

            async def settled() -> bool:
                snap = await poller.poll()
                got.clear()
                got.update({g: snap.groups[g].model for g in want if g in snap.groups})
                return got == want

            await until(settled, 15, lambda: f"message models {got}, want {want}")
            # the rate limit: with a long interval the cached answer stays
            poller.model_interval = 3600
            await consumers["g-cl"].shutdown()
            assert (await poller.poll()).groups["g-cl"].model == "CLUSTERING"
        finally:
            for consumer in consumers.values():
                await consumer.shutdown()
            await poller.close()


async def test_cluster_view_shows_a_real_slave_connected_and_caught_up(tmp_path: Path) -> None:
    """A slave of broker-a in the same cluster: the view shows the master with one slave,
    the slave connected and 0 B behind once it has the master's messages; stopped, the
    master shows no slave."""
    from mqcore.broker.config import BrokerConfig
    from mqcore.store.store_config import BrokerRole, MessageStoreConfig

    async with LiveCluster(tmp_path).running("broker-a") as cluster:
        async with Producer("p-tui-ha", cluster.addr) as producer:
            for i in range(5):
                await producer.send(make_message("Orders", f"order {i}"))
        slave = BrokerController(
            BrokerConfig(listen_port=0, bind_address="127.0.0.1", broker_ip1="127.0.0.1",
                         broker_name="broker-a", broker_id=1, namesrv_addr=cluster.addr,
                         log_dir=str(tmp_path / "logs")),
            MessageStoreConfig(store_path_root_dir=str(tmp_path / "broker-a-s"),
                               broker_role=BrokerRole.SLAVE,
                               mapped_file_size_commit_log=4 * 1024 * 1024,
                               mapped_file_size_consume_queue=20 * 10_000,
                               max_hash_slot_num=1000, max_index_num=4000),
        )  # fmt: skip
        await slave.start()
        stopped = False
        try:
            app = MQApp(cluster.addr, refresh=0)
            async with app.run_test(size=(200, 40)) as pilot:
                brokers = app.screen.query_one("#brokers", LiveTable)

                def cells(key: str) -> list[str]:
                    try:
                        return [str(c) for c in brokers.get_row(key)]
                    except Exception:  # not listed yet
                        return []

                await until(
                    lambda: cells("broker-a/1")[-2:] == ["connected", "0 B"],
                    30,
                    lambda: f"slave row {cells('broker-a/1')}",
                    pause=lambda: poll(pilot),
                )
                master, copy = cells("broker-a/0"), cells("broker-a/1")
                assert master[3] == "async master" and master[-2] == "1 slave"
                assert copy[3] == "slave" and copy[13] == master[13] != "0"  # COMMITLOG MAX
                await slave.shutdown()
                stopped = True
                await until(
                    lambda: cells("broker-a/0")[-2] == "no slave",
                    30,
                    lambda: f"master row {cells('broker-a/0')}",
                    pause=lambda: poll(pilot),
                )
        finally:
            if not stopped:
                await slave.shutdown()
