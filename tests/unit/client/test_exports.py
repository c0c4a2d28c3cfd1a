"""mqcore.client's names are loaded on first use; a producer alone stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mqcore.client


def test_every_exported_name_resolves() -> None:
    for name in mqcore.client.__all__:
        assert getattr(mqcore.client, name) is not None, name
    assert set(mqcore.client.__all__) <= set(dir(mqcore.client))


def test_an_unknown_name_is_an_attribute_error() -> None:
    name = "NoSuchName"
    with pytest.raises(AttributeError, match=name):
        getattr(mqcore.client, name)


def test_importing_the_producer_leaves_consumers_admin_trace_and_acl_model_out() -> None:
    code = (
        "import sys, mqcore.client.producer\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('mqcore', 'yaml')))))"
    )
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.split())  # fmt: skip
    assert "mqcore.client.producer" in loaded
    heavy = {
        "mqcore.client.admin",
        "mqcore.client.push_consumer",
        "mqcore.client.lite_pull_consumer",
        "mqcore.client.transaction",
        "mqcore.client.sync",
        "mqcore.client.trace_dispatcher",
        "mqcore.protocol.headers.admin",
        "mqcore.acl.config",
        "yaml",
    }
    assert not loaded & heavy
