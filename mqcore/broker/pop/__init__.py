"""RocketMQ 5's POP consumption in the broker: the revive log (checkpoints and acks as
messages of ``rmq_sys_REVIVE_LOG_<cluster>``), what a pop takes from the store, and the
revive service that brings back what nobody acknowledged. The request processors are
``broker/processor/pop.py`` and ``broker/processor/ack.py``."""
