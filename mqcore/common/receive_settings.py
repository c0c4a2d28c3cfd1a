"""`ReceiveSettings`: RocketMQ 5's proxy keys that bound a gRPC receive, under its names.

Both access points read them: a broker's own (local mode, from ``broker.conf``) and
``mq proxy`` (cluster mode, from its ``-c`` file), as RocketMQ 5 reads them from
``rmq-proxy.json``. A config class mixes this in beside :class:`PropertiesConfig`; the
access point turns them into :class:`mqcore.proxy.consumer.ReceiveLimits`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.errors import ConfigError

__all__ = ["ReceiveSettings"]


@dataclass
class ReceiveSettings:
    """Milliseconds, RocketMQ 5's defaults (``snake_case`` maps to ``camelCase``)."""

    min_invisible_time_mills_for_recv: int = 10_000
    """The shortest invisible time a receive may ask for (``ILLEGAL_INVISIBLE_TIME``)."""
    max_invisible_time_mills: int = 12 * 3600 * 1000
    """The longest invisible time a receive or a change may ask for."""
    default_invisible_time_mills: int = 60_000
    """What a receive with ``auto_renew`` (a push consumer) takes, renewed while it runs."""
    grpc_client_consumer_min_long_polling_timeout_millis: int = 5_000
    """The shortest long poll (less left before the call's deadline:
    ``ILLEGAL_POLLING_TIME``)."""
    grpc_client_consumer_max_long_polling_timeout_millis: int = 20_000
    """The longest long poll."""
    renew_schedule_period_millis: int = 5_000
    """How often the handles of ``auto_renew`` receives are looked at."""
    renew_ahead_time_millis: int = 10_000
    """Renew a handle whose invisible time ends within this."""
    renew_max_time_millis: int = 3 * 3600 * 1000
    """No renewal this long after the receive."""
    invisible_time_millis_when_clear: int = 1_000
    """A gone client's messages come back this soon."""

    def check_receive_settings(self) -> None:
        """ConfigError naming the first key out of range."""
        positive = {
            "minInvisibleTimeMillsForRecv": self.min_invisible_time_mills_for_recv,
            "maxInvisibleTimeMills": self.max_invisible_time_mills,
            "defaultInvisibleTimeMills": self.default_invisible_time_mills,
            "grpcClientConsumerMinLongPollingTimeoutMillis": (
                self.grpc_client_consumer_min_long_polling_timeout_millis
            ),
            "grpcClientConsumerMaxLongPollingTimeoutMillis": (
                self.grpc_client_consumer_max_long_polling_timeout_millis
            ),
            "renewSchedulePeriodMillis": self.renew_schedule_period_millis,
            "renewAheadTimeMillis": self.renew_ahead_time_millis,
            "renewMaxTimeMillis": self.renew_max_time_millis,
            "invisibleTimeMillisWhenClear": self.invisible_time_millis_when_clear,
        }
        for key, value in positive.items():
            if value <= 0:
                raise ConfigError(f"{key} must be > 0, got {value}")
        if self.min_invisible_time_mills_for_recv > self.max_invisible_time_mills:
            raise ConfigError(
                "minInvisibleTimeMillsForRecv must not exceed maxInvisibleTimeMills"
                f" ({self.min_invisible_time_mills_for_recv} > {self.max_invisible_time_mills})"
            )
        if (
            self.grpc_client_consumer_min_long_polling_timeout_millis
            > self.grpc_client_consumer_max_long_polling_timeout_millis
        ):
            raise ConfigError(
                "grpcClientConsumerMinLongPollingTimeoutMillis must not exceed"
                " grpcClientConsumerMaxLongPollingTimeoutMillis"
            )
