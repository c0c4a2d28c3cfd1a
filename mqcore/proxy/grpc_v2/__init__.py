"""Generated code of RocketMQ 5's gRPC interface, ``apache.rocketmq.v2``.

``proto/apache/rocketmq/v2/{definition,service,admin}.proto`` are apache/rocketmq-apis'
protos, vendored unchanged (the interface the official 5.x SDKs speak); every other file
here is what ``make protos`` generates from them (grpcio-tools: messages, their ``.pyi``
stubs for mypy, and the service stubs the tests use as a client). Nothing here is edited by
hand; regenerate after changing a proto.
"""
