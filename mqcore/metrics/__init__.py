"""Prometheus metrics: RocketMQ 5's metric names and labels, served over HTTP.

What is measured lives where the figures already are (the broker's statistics, store,
client tables and HA; the name server's route table); this package holds what every
exporting process shares and nothing of a broker's:

* :mod:`~mqcore.metrics.names`: the metric and label names (RocketMQ 5's
  ``BrokerMetricsConstant`` and friends, and mq's own where RocketMQ has none), the
  ``metricsExporterType`` values and the ``metricsLabel`` parser;
* :mod:`~mqcore.metrics.families`: :class:`~mqcore.metrics.families.MetricSet`, the
  families of one scrape with the process's own labels on every sample;
* :mod:`~mqcore.metrics.rpc`: the ``rocketmq_rpc_latency`` histogram, fed by a
  remoting dispatcher;
* :mod:`~mqcore.metrics.http`: the HTTP endpoint (a thread of its own) and the
  collector that has the event loop read the figures in slices at each scrape.

The broker's collection is :mod:`mqcore.broker.metrics`, the name server's
:mod:`mqcore.namesrv.metrics`, and the cluster exporter that asks any RocketMQ 4.x or
mq cluster over admin requests :mod:`mqcore.client.exporter`.
"""
