"""The one exception tree of mq.

Every error the engine raises on purpose derives from :class:`MQError`, so callers
(the CLI, servers answering a client) can catch one type and turn it into a clear line
or a proper response code::

    MQError
    ├── ConfigError              bad configuration value or file
    ├── StoreError               the message store cannot do what was asked
    │   ├── CorruptRecordError   bytes that are not a valid commit log record / file entry
    │   └── StoreLockedError     another process holds the store's lock file
    ├── ProtocolError            a remoting frame or header that does not parse
    │   ├── LocalProtocolError   we were asked to encode something invalid
    │   └── RemoteProtocolError  the peer sent something invalid
    ├── FilterSyntaxError        a tag or SQL92 expression that does not parse
    └── MQClientError            client-side failure (no route, not started, ...)
        ├── MQTimeoutError       no answer in time (retriable)
        ├── MQBrokerError        the server answered with an error code
        ├── RemotingConnectError         (mqcore.remoting) cannot connect (retriable)
        │   ├── NameServerUnreachableError   (mqcore.client.errors) no name server answers
        │   └── BrokerUnreachableError       (mqcore.client.errors) a broker is down
        ├── ChannelClosedError           (mqcore.remoting) connection lost mid-request
        ├── TopicRouteNotFoundError      (mqcore.client.errors) no route (invalid_route)
        ├── ClientStateError             (mqcore.client.errors) not started, closed, ...
        └── InvalidMessageError          (mqcore.client.errors) bad topic/body; ValueError

Classes carry behavioural flags (``retriable``) rather than forcing callers to enumerate
types, as aiokafka does.
"""

from __future__ import annotations


class MQError(Exception):
    """Root of every error mq raises on purpose."""

    retriable: bool = False


class ConfigError(MQError):
    """A configuration key or file is invalid."""


class StoreError(MQError):
    """The message store cannot complete an operation."""


class DiskFullError(StoreError):
    """No room on the store's file system for a new or grown file: writes stop, reads go
    on, and writing resumes once space returns."""


class CorruptRecordError(StoreError):
    """Bytes that should be a record or file entry are not valid.

    ``path`` and ``offset`` say where, when known, so a tool can print one precise line.
    """

    def __init__(self, message: str, *, path: str | None = None, offset: int | None = None):
        self.path = path
        self.offset = offset
        where = ""
        if path is not None:
            where = f"{path}"
            if offset is not None:
                where += f" at offset {offset}"
            where += ": "
        elif offset is not None:
            where = f"at offset {offset}: "
        super().__init__(where + message)
        self.detail = message


class StoreLockedError(StoreError):
    """Another process holds the store lock; two writers would corrupt the store."""


class ProtocolError(MQError):
    """A remoting frame or header is malformed; the connection cannot continue."""


class LocalProtocolError(ProtocolError):
    """We were asked to encode something that cannot be put on the wire."""


class RemoteProtocolError(ProtocolError):
    """The peer sent bytes that are not a valid remoting frame."""


class FilterSyntaxError(MQError):
    """A subscription expression (tags or SQL92) does not parse."""

    def __init__(self, message: str, *, expression: str = "", position: int | None = None):
        self.expression = expression
        self.position = position
        super().__init__(message)


class MQClientError(MQError):
    """A client-side failure; the message says what to check."""


class MQTimeoutError(MQClientError):
    """No answer within the timeout; the request may be retried."""

    retriable = True


class MQBrokerError(MQClientError):
    """The server answered with a non-success response code."""

    def __init__(self, code: int, remark: str | None = None):
        self.code = code
        self.remark = remark or ""
        super().__init__(f"broker error {code}: {self.remark}" if self.remark else f"code {code}")


class MessageIdError(MQError, ValueError):
    """A message id (offset msg id or unique key) that cannot be decoded."""
