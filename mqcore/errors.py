"""The one exception tree of mq.

Every error the engine raises on purpose derives from :class:`MQError`, so callers
(the CLI, servers answering a client) can catch one type and turn it into a clear line
or a proper response code. The whole tree, every class of every ``mqcore`` module, is
drawn here; ``(module, Base)`` names where a class lives when it is not this module
(``mqcore.`` left out) and any base besides its parent. tests/unit/test_errors_tree.py
walks the modules and fails when this drawing and the classes part::

    MQError
    ├── ConfigError                 a configuration value or file is invalid
    │   └── TopicNameError          (store.metadata.topic) a topic name RocketMQ refuses
    ├── StoreError                  the message store cannot do what was asked
    │   ├── DiskFullError           no room for a file: writes stop, reads go on
    │   ├── CorruptRecordError      bytes that are not a valid record / file entry
    │   ├── StoreLockedError        another process holds the store's lock file
    │   ├── ConsumeQueueMismatch    (store.recovery_point) a queue disagrees with the commit log
    │   └── IllegalMessageError     (store.batch_encoder) a message the store refuses
    ├── ProtocolError               a frame or header that does not parse
    │   ├── LocalProtocolError      we were asked to encode something invalid
    │   ├── RemoteProtocolError     the peer sent something invalid
    │   └── HAProtocolError         (protocol.ha, ValueError) an HA stream no peer sends
    ├── HeaderError                 (protocol.headers.base, ValueError) bad extFields
    ├── BodyError                   (protocol.bodies.base, ValueError) a body not as expected
    ├── ExtraInfoError              (protocol.extra_info, ValueError) a POP receipt not as 5.x's
    ├── FastjsonError               (common.fastjson, ValueError) text that is not JSON
    ├── MessageIdError              (ValueError) a message id that cannot be decoded
    ├── FilterSyntaxError           a tag or SQL92 expression that does not parse
    ├── EvalError                   (filter.sql92.values) a SQL92 conversion Java throws on
    ├── RequestRefused              a request check failed: its processor answers the code
    │   ├── SendRefused             (broker.send_checks) a send check: nothing is stored
    │   ├── PullRefused             (broker.processor.pull) a pull check
    │   └── PopRefused              (broker.processor.pop) a POP check
    ├── SlaveSyncError              (broker.slave_sync) the master refused a sync request
    ├── TopicCreateError            (broker.topics, ValueError) a topic a send cannot make
    ├── EventDecodeError            (controller.events, ValueError) a bad Raft log entry
    ├── ReplicationError            (controller.raft) events not committed (retriable)
    ├── ProxyError                  (proxy.status) a gRPC call refused, with its v2 Code
    ├── StateError                  (client.process_queue, RuntimeError) a bug: event out of order
    └── MQClientError               client-side failure (no route, not started, ...)
        ├── MQTimeoutError          no answer in time (retriable)
        │   └── RequestTimeoutError     (client.request_reply) no reply in time
        ├── MQBrokerError           the server answered with an error code
        ├── RemotingConnectError    (remoting.errors) cannot connect (retriable)
        │   ├── NameServerUnreachableError  (client.errors) no name server answers
        │   └── BrokerUnreachableError      (client.errors) a broker is down
        ├── ChannelClosedError      (remoting.errors) connection lost mid-request
        ├── TopicRouteNotFoundError (client.errors) no route (invalid_route)
        ├── NotANameServerError     (client.errors) a broker given as a name server
        ├── ClientStateError        (client.errors) not started, closed, ...
        ├── InvalidMessageError     (client.errors, ValueError) bad topic or body
        ├── InvalidGroupError       (client.errors, ValueError) a group name RocketMQ refuses
        └── ReplyMessageError       (client.request_reply, ValueError) not a request

Classes carry behavioural flags (``retriable``) rather than forcing callers to enumerate
types, as aiokafka does, and may carry a ``hint``: what to do next, which the CLI prints
under the one-line error.
"""

from __future__ import annotations


class MQError(Exception):
    """Root of every error mq raises on purpose."""

    retriable: bool = False
    hint: str | None = None
    """What to do about it, when that can be said (the CLI prints it as ``hint:``)."""


class RequestRefused(MQError):
    """A server-side check failed: the processor answers ``code`` with ``remark`` and
    changes nothing (caught where it is raised; no caller sees it)."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


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
    """A remoting or HA frame or header is malformed; the connection cannot continue."""


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
