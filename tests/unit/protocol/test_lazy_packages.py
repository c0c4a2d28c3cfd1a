"""The header and body packages re-export their submodules' names lazily.

What a one-shot command pays for is what it uses: importing a package builds none of the
submodules' dataclasses, one name imports the submodules up to the one that holds it, and
every name the package documents is still there.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = {
    "mqcore.protocol.headers": ("send", "namesrv", "consume", "admin"),
    "mqcore.protocol.bodies": ("route", "client", "stats"),
}


def _fresh(code: str) -> str:
    """Run *code* in a new interpreter: sys.modules here already holds everything."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_submodule_name_is_exported(package: str) -> None:
    pkg = importlib.import_module(package)
    for sub in PACKAGES[package]:
        module = importlib.import_module(f"{package}.{sub}")
        for name in module.__all__:
            assert getattr(pkg, name) is getattr(module, name), (package, name)
            assert name in pkg.__all__
            assert name in dir(pkg)


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_star_import_gives_all(package: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)
    pkg = importlib.import_module(package)
    assert set(pkg.__all__) <= set(namespace)


def test_unknown_name_is_an_import_error() -> None:
    with pytest.raises(ImportError, match="NoSuchHeader"):
        exec("from mqcore.protocol.headers import NoSuchHeader", {})


def test_importing_the_package_builds_no_submodule() -> None:
    """(The compiled twin of the readers, ``headers._reader``, comes with ``base``.)"""
    loaded = _fresh(
        "import sys, mqcore.protocol.headers, mqcore.protocol.bodies; "
        "print(sorted(m for m in sys.modules if m.startswith('mqcore.protocol.') "
        "and m.count('.') == 3 and not m.rpartition('.')[2].startswith('_')))"
    )
    assert loaded == "['mqcore.protocol.bodies.base', 'mqcore.protocol.headers.base']"


def test_a_send_header_imports_only_the_send_module() -> None:
    loaded = _fresh(
        "import sys; from mqcore.protocol.headers import SendMessageRequestHeader; "
        "print(sorted(m for m in sys.modules if m.startswith('mqcore.protocol.headers.') "
        "and not m.rpartition('.')[2].startswith('_')))"
    )
    assert loaded == "['mqcore.protocol.headers.base', 'mqcore.protocol.headers.send']"
