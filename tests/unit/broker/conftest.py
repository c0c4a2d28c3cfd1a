"""A started in-process broker (no name server, ephemeral port, small store files)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mqcore.broker.config import BrokerConfig
from mqcore.broker.controller import BrokerController
from mqcore.store.store_config import MessageStoreConfig


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[BrokerController]:
    controller = BrokerController(
        BrokerConfig(
            broker_name="broker-a",
            broker_ip1="127.0.0.1",
            bind_address="127.0.0.1",
            listen_port=0,
            namesrv_addr=None,
            transaction_check_max=3,
        ),
        MessageStoreConfig(
            store_path_root_dir=str(tmp_path / "store"),
            mapped_file_size_commit_log=1024 * 1024,
            mapped_file_size_consume_queue=20 * 1000,
            max_hash_slot_num=1000,
            max_index_num=4000,
        ),
    )
    await controller.start()
    try:
        yield controller
    finally:
        await controller.shutdown()
