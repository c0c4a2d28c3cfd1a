"""Placeholder; filled in by the next commit."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mqcore.broker.controller import BrokerController


def register(controller: BrokerController) -> None:
    pass
