"""The dashboard tests import the integration helpers (in-process brokers); the pilot
helpers are in pilot_support.py."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
