"""mq engine: a RocketMQ 4.x-shaped message store, protocol, servers and client."""

__version__ = "0.1.0"
