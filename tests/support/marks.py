"""How a test module or test says how its fixtures start: ``pytest.mark.cluster(...)``
(registered in tests/conftest.py) on the module (``pytestmark``), a class or a test."""

from __future__ import annotations

from typing import Any

import pytest


def cluster_settings(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The keyword arguments of every ``cluster`` mark on the requesting module, class
    and test, merged: the closer mark wins a key."""
    settings: dict[str, Any] = {}
    for mark in reversed(list(request.node.iter_markers("cluster"))):
        settings.update(mark.kwargs)
    return settings
