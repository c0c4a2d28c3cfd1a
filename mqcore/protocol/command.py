"""`RemotingCommand`: the one message type of the remoting protocol (request or response).

A command is immutable once built, like h11's events: a transport that needs another
``opaque`` makes a copy with :func:`dataclasses.replace`. ``ext_fields`` holds the
"custom header" as text, exactly as Java keeps it (``HashMap<String,String>``); typed views
of it live in :mod:`mqcore.protocol.headers`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from mqcore.protocol.codes import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    MQ_VERSION,
    LanguageCode,
    SerializeType,
)
from mqcore.protocol.fastbuild import positional_builder

__all__ = ["Body", "RemotingCommand", "make_command", "next_opaque"]

Body: TypeAlias = bytes | bytearray | memoryview
"""Anything that can be written as a body without copying it first."""

_opaque_counter = itertools.count(1)


def next_opaque() -> int:
    """A process-wide increasing request id (wraps within a signed 32-bit int)."""
    return next(_opaque_counter) & 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class RemotingCommand:
    """One request or response.

    ``language`` is the sender's :class:`LanguageCode`; unknown names read from the wire
    become ``OTHER`` (Java turns them into null; nothing we do depends on it).
    ``serialize_type`` is how the header was (or will be) encoded; responses made with
    :meth:`response_to` copy it from the request, as every RocketMQ peer expects.
    """

    code: int
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: Mapping[str, str] = field(default_factory=dict)
    body: Body = b""
    language: LanguageCode = LanguageCode.JAVA
    version: int = MQ_VERSION
    serialize_type: SerializeType = SerializeType.JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: Body = b"",
        *,
        oneway: bool = False,
        opaque: int | None = None,
        language: LanguageCode = LanguageCode.JAVA,
        version: int = MQ_VERSION,
        serialize_type: SerializeType = SerializeType.JSON,
        remark: str | None = None,
    ) -> RemotingCommand:
        """A new request; ``ext_fields`` usually comes from a header's ``to_ext_fields()``."""
        return make_command(
            int(code),
            next_opaque() if opaque is None else opaque,
            FLAG_ONEWAY if oneway else 0,
            remark,
            ext_fields if ext_fields is not None else {},
            body,
            language,
            version,
            serialize_type,
        )

    @classmethod
    def response_to(
        cls,
        request: RemotingCommand,
        code: int = 0,
        remark: str | None = None,
        ext_fields: Mapping[str, str] | None = None,
        body: Body = b"",
    ) -> RemotingCommand:
        """The answer to ``request``: same opaque and serialization, response bit set.

        ``language`` is JAVA and ``version`` 409, the values real clients expect from a
        4.9.8 server (spec §2).
        """
        return make_command(
            int(code),
            request.opaque,
            FLAG_RESPONSE,
            remark,
            ext_fields if ext_fields is not None else {},
            body,
            LanguageCode.JAVA,
            MQ_VERSION,
            request.serialize_type,
        )

    def __repr__(self) -> str:
        kind = "response" if self.is_response else ("oneway" if self.is_oneway else "request")
        return (
            f"RemotingCommand({kind} code={self.code} opaque={self.opaque}"
            f" remark={self.remark!r} ext_fields={dict(self.ext_fields)!r}"
            f" body={len(self.body)}B {self.serialize_type.name})"
        )


make_command: Callable[
    [int, int, int, str | None, Mapping[str, str], Body, LanguageCode, int, SerializeType],
    RemotingCommand,
] = positional_builder(RemotingCommand)
"""``RemotingCommand(...)`` with every field given positionally, at a third of the cost (see
:mod:`mqcore.protocol.fastbuild`): the decoders and ``response_to`` build one per request."""
