"""Message (what a producer sends) and MessageExt (what a stored record holds)."""

from __future__ import annotations

from dataclasses import dataclass, field

from mqcore.message import const
from mqcore.message.ids import create_offset_msg_id

HostAddr = tuple[str, int]
"""An ``(ip, port)`` pair; IPv4 or IPv6 text form."""


@dataclass(slots=True)
class Message:
    """A message as a producer builds it: topic, body, user flag and properties."""

    topic: str
    body: bytes = b""
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def tags(self) -> str | None:
        return self.properties.get(const.PROPERTY_TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set(const.PROPERTY_TAGS, value)

    @property
    def keys(self) -> list[str]:
        raw = self.properties.get(const.PROPERTY_KEYS, "")
        return [k for k in raw.split(const.KEY_SEPARATOR) if k]

    @keys.setter
    def keys(self, value: list[str] | str | None) -> None:
        if isinstance(value, list):
            value = const.KEY_SEPARATOR.join(value) if value else None
        self._set(const.PROPERTY_KEYS, value)

    @property
    def delay_level(self) -> int:
        try:
            return int(self.properties.get(const.PROPERTY_DELAY_TIME_LEVEL, "0"))
        except ValueError:
            return 0

    @delay_level.setter
    def delay_level(self, level: int) -> None:
        self._set(const.PROPERTY_DELAY_TIME_LEVEL, str(level) if level > 0 else None)

    @property
    def deliver_time_ms(self) -> int | None:
        """RocketMQ 5's timer message: deliver at this epoch time in ms
        (``TIMER_DELIVER_MS``; ``setDeliverTimeMs``)."""
        return _int_or_none(self.properties.get(const.PROPERTY_TIMER_DELIVER_MS))

    @deliver_time_ms.setter
    def deliver_time_ms(self, value: int | None) -> None:
        self._set(const.PROPERTY_TIMER_DELIVER_MS, None if value is None else str(value))

    @property
    def delay_time_ms(self) -> int | None:
        """RocketMQ 5's timer message: deliver this many ms after the broker stores it
        (``TIMER_DELAY_MS``; ``setDelayTimeMs``)."""
        return _int_or_none(self.properties.get(const.PROPERTY_TIMER_DELAY_MS))

    @delay_time_ms.setter
    def delay_time_ms(self, value: int | None) -> None:
        self._set(const.PROPERTY_TIMER_DELAY_MS, None if value is None else str(value))

    @property
    def wait_store_msg_ok(self) -> bool:
        return self.properties.get(const.PROPERTY_WAIT_STORE_MSG_OK, "true") != "false"

    @property
    def unique_key(self) -> str | None:
        return self.properties.get(const.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    @unique_key.setter
    def unique_key(self, value: str | None) -> None:
        self._set(const.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, value)

    @property
    def user_properties(self) -> dict[str, str]:
        return {k: v for k, v in self.properties.items() if k not in const.STRING_HASH_SET}

    def _set(self, name: str, value: str | None) -> None:
        if value is None or value == "":
            self.properties.pop(name, None)
        else:
            self.properties[name] = value


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


@dataclass(slots=True, kw_only=True)
class MessageExt(Message):
    """Everything a commit log record holds, decoded."""

    queue_id: int = 0
    store_size: int = 0
    queue_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: HostAddr = ("0.0.0.0", 0)
    store_timestamp: int = 0
    store_host: HostAddr = ("0.0.0.0", 0)
    commit_log_offset: int = 0
    body_crc: int = 0
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    magic_code: int = const.MESSAGE_MAGIC_CODE
    stored_body_length: int = 0
    """Length of the body as stored (compressed bodies differ from ``len(body)``)."""

    @property
    def msg_id(self) -> str:
        """Offset message id: store host + commit log offset."""
        return create_offset_msg_id(self.store_host, self.commit_log_offset)

    @property
    def transaction_type(self) -> int:
        return self.sys_flag & const.SysFlag.TRANSACTION_MASK

    def rerouted(
        self,
        topic: str,
        queue_id: int,
        *,
        properties: dict[str, str] | None = None,
        sys_flag: int | None = None,
        reconsume_times: int | None = None,
        prepared_transaction_offset: int = 0,
        cls: type[MessageExt] | None = None,
    ) -> MessageExt:
        """A copy of this stored message for putting again under ``topic``/``queue_id``
        (delay delivery, retry, commit): body, flag, born time and host, store host kept;
        offsets and store time are the new record's own."""
        return (cls or MessageExt)(
            topic=topic,
            body=self.body,
            flag=self.flag,
            properties=dict(self.properties) if properties is None else properties,
            queue_id=queue_id,
            sys_flag=self.sys_flag if sys_flag is None else sys_flag,
            born_timestamp=self.born_timestamp,
            born_host=self.born_host,
            store_host=self.store_host,
            reconsume_times=self.reconsume_times if reconsume_times is None else reconsume_times,
            prepared_transaction_offset=prepared_transaction_offset,
        )
