"""Stand-ins for the client services until ``client_manager``/``rebalance_lock``/``stats``
land: they accept the calls the send and pull paths make and remember nothing."""

from __future__ import annotations

from mqcore.protocol.bodies.client import SubscriptionData


class PendingProducerManager:
    pass


class PendingConsumerManager:
    def find_subscription(self, group: str, topic: str) -> SubscriptionData | None:
        return None


class PendingRebalanceLockManager:
    pass


class PendingBrokerStatsManager:
    def on_put(self, topic: str, msgs: int, size: int) -> None:
        pass

    def on_get(self, group: str, topic: str, msgs: int, size: int) -> None:
        pass
