"""How a test module or test says how its fixtures start: ``pytest.mark.cluster(...)``
or ``pytest.mark.process_cluster(...)`` (registered in tests/conftest.py) on the module
(``pytestmark``), a class or a test."""

from __future__ import annotations

from typing import Any

import pytest


def cluster_settings(request: pytest.FixtureRequest, mark: str = "cluster") -> dict[str, Any]:
    """The keyword arguments of every ``mark`` mark on the requesting module, class and
    test, merged: the closer mark wins a key."""
    settings: dict[str, Any] = {}
    for found in reversed(list(request.node.iter_markers(mark))):
        settings.update(found.kwargs)
    return settings
