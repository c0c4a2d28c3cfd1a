"""What the controller answers: a code, a response header, a JSON body.

Each operation of :class:`~mqcore.controller.replicas.ReplicasInfoManager` returns a
:class:`ControllerResult`: the answer for the caller and the events that, once
replicated and applied, make the state match it. The answer is made of the protocol's
own types: ``response`` is the RocketMQ 5 response header of the request
(:mod:`mqcore.protocol.headers.controller`, e.g. ``ElectMasterResponseHeader``) and
``body`` its JSON body (:mod:`mqcore.protocol.bodies.controller`), so the request
processor answers with them as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Generic, TypeAlias, TypeVar

from mqcore.controller.events import Event
from mqcore.protocol.bodies.controller import (
    BrokerReplicasInfo,
    ElectMasterResponseBody,
    SyncStateSet,
)
from mqcore.protocol.codes import ResponseCode

__all__ = ["ControllerBody", "ControllerResult"]

R = TypeVar("R")

ControllerBody: TypeAlias = SyncStateSet | ElectMasterResponseBody | BrokerReplicasInfo
"""The bodies the controller answers with."""


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[R]):
    """The answer to one request, and the events that make it true once applied.

    ``code`` is a :class:`~mqcore.protocol.codes.ResponseCode` (``SUCCESS`` or one of
    the ``CONTROLLER_*`` codes); a refused request has no events, though a failed
    election may (the old master is gone even when nobody could replace it)."""

    response: R
    code: int = ResponseCode.SUCCESS
    remark: str | None = None
    body: ControllerBody | None = None
    events: tuple[Event, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.code == ResponseCode.SUCCESS

    def with_events(self, *events: Event) -> ControllerResult[R]:
        return replace(self, events=events)

    def refused(self, code: int, remark: str) -> ControllerResult[R]:
        """The same response header with ``code`` and ``remark``, no body and nothing to
        apply."""
        return replace(self, code=code, remark=remark, body=None, events=())
