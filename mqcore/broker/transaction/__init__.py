"""Transactional messages on the broker: half messages, END_TRANSACTION and check-back.

:mod:`.bridge` reads and writes the half/op topics, :mod:`.service` ends transactions
(the commit/rollback state table), :mod:`.check` asks producers about the undecided.
"""

from __future__ import annotations

from mqcore.broker.transaction.bridge import (
    HALF_QUEUE_ID,
    REMOVE_TAG,
    SYS_TRANS_GROUP,
    TransactionalMessageBridge,
)
from mqcore.broker.transaction.check import CheckReport, TransactionalMessageCheckService
from mqcore.broker.transaction.service import (
    END_ACTIONS,
    EndOutcome,
    TransactionalMessageService,
    is_half_message,
    prepare_half_message,
)

__all__ = [
    "END_ACTIONS",
    "HALF_QUEUE_ID",
    "REMOVE_TAG",
    "SYS_TRANS_GROUP",
    "CheckReport",
    "EndOutcome",
    "TransactionalMessageBridge",
    "TransactionalMessageCheckService",
    "TransactionalMessageService",
    "is_half_message",
    "prepare_half_message",
]
