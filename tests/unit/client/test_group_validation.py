"""Group names are checked in every client constructor, as ``Validators.checkGroup``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mqcore.client import (
    InvalidGroupError,
    LitePullConsumer,
    Producer,
    PushConsumer,
    TransactionProducer,
)
from mqcore.errors import MQClientError

CONSTRUCTORS: list[Callable[[str], object]] = [
    lambda g: Producer(g, namesrv="127.0.0.1:9876"),
    lambda g: PushConsumer(g, namesrv="127.0.0.1:9876"),
    lambda g: LitePullConsumer(g, namesrv="127.0.0.1:9876"),
    lambda g: TransactionProducer(g, namesrv="127.0.0.1:9876"),
]
IDS = ["producer", "push", "lite-pull", "transaction"]


@pytest.mark.parametrize("make", CONSTRUCTORS, ids=IDS)
@pytest.mark.parametrize(
    ("group", "why"),
    [
        ("", "blank"),
        ("   ", "blank"),
        ("order group", "illegal characters"),
        ("grp/1", "illegal characters"),
        ("gr\u00fcppe", "illegal characters"),
        ("g" * 256, "longer than 255"),
    ],
)
def test_bad_group_names_are_refused(make: Callable[[str], object], group: str, why: str) -> None:
    with pytest.raises(InvalidGroupError, match=why) as err:
        make(group)
    assert isinstance(err.value, MQClientError) and isinstance(err.value, ValueError)


@pytest.mark.parametrize("make", CONSTRUCTORS, ids=IDS)
@pytest.mark.parametrize("group", ["g1", "CID_orders-2", "%RETRY%g|x", "g" * 255])
def test_good_group_names_are_accepted(make: Callable[[str], object], group: str) -> None:
    make(group)
