"""The `mq` commands: for each, the module that builds it, its help panel and its one-line
help, in the order `mq --help` lists them.

The app (:mod:`mqcli.app`) lists and completes command words from this table without
importing any command module, and imports one only when the command line reaches it.
"""

from __future__ import annotations

__all__ = ["COMMANDS"]

COMMANDS: dict[str, tuple[str, str, str]] = {
    "namesrv": (
        "mqcli.commands.namesrv",
        "Servers",
        "Run a name server: brokers register here, clients look up topic routes.",
    ),
    "broker": (
        "mqcli.commands.broker",
        "Servers",
        "Run a broker: stores messages, serves producers and consumers, registers routes.",
    ),
    "proxy": (
        "mqcli.commands.proxy",
        "Servers",
        "Run the gRPC access point for RocketMQ 5 SDKs in front of a cluster (cluster mode).",
    ),
    "controller": (
        "mqcli.commands.controller",
        "Servers",
        "Run a controller (RocketMQ 5's controller mode), or ask the running ones.",
    ),
    "up": (
        "mqcli.commands.up",
        "Servers",
        "Run a name server and a broker in one process (Ctrl-C stops both).",
    ),
    "produce": ("mqcli.commands.produce", "Messages", "Send messages to TOPIC."),
    "consume": ("mqcli.commands.consume", "Messages", "Print messages of TOPIC as they arrive."),
    "query": (
        "mqcli.commands.query",
        "Messages",
        "Find messages by key, msg id, unique key, or store time.",
    ),
    "message": (
        "mqcli.commands.message",
        "Messages",
        "Look at one message; send it again (to a consumer of a group, or to its topic); "
        "recall a timer message.",
    ),
    "topic": (
        "mqcli.commands.topic",
        "Administration",
        "Create, change, delete and look at topics (queues, routes, depth).",
    ),
    "group": (
        "mqcli.commands.group",
        "Administration",
        "Consumer groups: lag, members and their status, offset resets, dead letters.",
    ),
    "cluster": ("mqcli.commands.cluster", "Administration", "Clusters and their brokers."),
    "kv": (
        "mqcli.commands.kv",
        "Administration",
        "The name servers' KV config (namespace, key, value).",
    ),
    "tui": ("mqcli.commands.tui", "Tools", "Live dashboard of a cluster (Textual)."),
    "bench": (
        "mqcli.commands.bench",
        "Tools",
        "Load generators: `produce` sends a fixed load, `consume` drains a topic, `e2e` does "
        "both at once; each reports rate and latency.",
    ),
    "store": (
        "mqcli.commands.store",
        "Tools",
        "Read and check store files offline (never writes to them).",
    ),
    "context": (
        "mqcli.commands.context",
        "Tools",
        "Save name server addresses under names and pick one.",
    ),
    "acl": (
        "mqcli.commands.acl",
        "Tools",
        "Inspect a plain_acl.yml, or change the ACL of running brokers (RocketMQ 4.x plain ACL).",
    ),
    "exporter": ("mqcli.commands.exporter", "Tools", "Serve Prometheus metrics of any cluster."),
    "completion": ("mqcli.commands.completion", "Tools", "Print the completion script for SHELL."),
}
"""Command name -> (module exposing ``register``, help panel, one-line help), in the
order `mq --help` lists them. tests/cli/test_startup.py checks the help against each
module's own."""
