"""Which core runs: the switch, a missing build, and a stale build refused at import."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqcore.common import core
from tests.support.compiled import compiled_twin


@pytest.fixture
def fake_package(tmp_path: Path) -> Iterator[Path]:
    """An importable package ``mqfake_<n>`` in tmp_path, for twins made up by the test
    (a ``.py`` standing in for the extension: ``load`` only imports it and reads
    ``SOURCE_STAMP``)."""
    name = f"mqfake_{abs(hash(tmp_path)) % 10**8}"
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    sys.path.insert(0, str(tmp_path))
    try:
        yield package
    finally:
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]


def make_twin(package: Path, source: bytes, stamp_of: bytes) -> str:
    (package / "_twin.pyx").write_bytes(source)
    stamp = hashlib.sha256(stamp_of).hexdigest()
    (package / "_twin.py").write_text(f"SOURCE_STAMP = {stamp!r}\nVALUE = 1\n")
    importlib.invalidate_caches()
    return f"{package.name}._twin"


def test_a_current_twin_is_used(fake_package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(core.ENV_SWITCH, raising=False)
    name = make_twin(fake_package, b"def f(): pass\n", b"def f(): pass\n")
    module = core.load(name)
    assert module is not None and module.VALUE == 1
    assert core._STATUS[name] == core.CoreStatus(name, True, "")


def test_a_stale_twin_is_refused_with_a_warning(
    fake_package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(core.ENV_SWITCH, raising=False)
    name = make_twin(fake_package, b"def f(): return 2\n", b"def f(): return 1\n")
    with pytest.warns(RuntimeWarning, match="Run `make`"):
        assert core.load(name) is None
    assert core._STATUS[name].reason == (
        "stale: _twin.pyx (or a .pxd it shares) changed since it was compiled"
    )


def test_the_switch_forces_the_pure_core(
    fake_package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(core.ENV_SWITCH, "1")
    name = make_twin(fake_package, b"x", b"x")
    assert core.load(name) is None
    assert core._STATUS[name].reason == "forced by MQ_NO_EXTENSIONS=1"
    monkeypatch.setenv(core.ENV_SWITCH, "0")  # "0" and "" mean: not forced
    assert not core.forced_pure()


def test_a_twin_not_built_leaves_the_pure_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(core.ENV_SWITCH, raising=False)
    assert core.load("mqcore.common._no_such_twin") is None
    assert core._STATUS["mqcore.common._no_such_twin"].reason == "not built"


def test_summary_names_the_pure_twins_and_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "_STATUS", {})
    monkeypatch.setattr(core, "_MODULES", {})
    monkeypatch.setattr(core, "EXTENSIONS", ("p._a", "p._b"))
    monkeypatch.setattr(core, "load", lambda name: None)
    core._STATUS.update(
        {"p._a": core.CoreStatus("p._a", True, ""), "p._b": core.CoreStatus("p._b", True, "")}
    )
    assert core.summary() == "compiled"
    core._STATUS["p._b"] = core.CoreStatus("p._b", False, "not built")
    assert core.summary() == "mixed (pure: _b: not built)"
    core._STATUS["p._a"] = core.CoreStatus("p._a", False, "not built")
    assert core.summary() == "pure (not built)"


def test_the_built_extensions_carry_the_stamp_of_their_source(tmp_path: Path) -> None:
    """The real build: each extension's stamp is its .pyx's sha256 followed by the shared
    .pxd files', and a modified copy of that .pyx no longer matches it."""
    shared = sorted((Path(core.__file__).parents[1]).rglob("*.pxd"))
    assert [p.name for p in shared] == ["_wire.pxd"]
    for name in core.EXTENSIONS:
        module = compiled_twin(name)
        assert core.check_stamp(module) == ""
        source = Path(module.__file__ or "").with_name(name.rpartition(".")[2] + ".pyx")
        expected = hashlib.sha256(source.read_bytes())
        for pxd in shared:
            expected.update(pxd.read_bytes())
        assert expected.hexdigest() == module.SOURCE_STAMP
        edited = tmp_path / source.name
        shutil.copy(source, edited)
        with edited.open("a") as out:
            out.write("\n# edited after the build\n")
        assert core.check_stamp(module, edited) == (
            f"{source.name} (or a .pxd it shares) changed since it was compiled"
        )


def test_an_edited_shared_pxd_makes_every_twin_stale(
    fake_package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A twin built before a shared .pxd changed is refused, though its own .pyx did not
    change: the inline code it was compiled with is not what the sources say."""
    monkeypatch.delenv(core.ENV_SWITCH, raising=False)
    monkeypatch.setattr(core, "_PXD", {})
    sub = fake_package / "sub"
    sub.mkdir()
    (sub / "__init__.py").write_text("")
    pxd = fake_package / "_shared.pxd"
    pxd.write_bytes(b"cdef inline int one(): return 1\n")
    source = b"def f(): pass\n"
    (sub / "_twin.pyx").write_bytes(source)
    stamp = hashlib.sha256(source + pxd.read_bytes()).hexdigest()
    (sub / "_twin.py").write_text(f"SOURCE_STAMP = {stamp!r}\n")
    importlib.invalidate_caches()
    module = importlib.import_module(f"{fake_package.name}.sub._twin")
    assert core.check_stamp(module) == ""
    pxd.write_bytes(b"cdef inline int one(): return 2\n")
    assert core.check_stamp(module) == (
        "_twin.pyx (or a .pxd it shares) changed since it was compiled"
    )


def test_the_build_and_the_import_check_compute_one_stamp() -> None:
    """hatch_build.py (loaded standalone by hatchling, so it cannot import mqcore) and
    ``check_stamp`` write the rule twice: they must agree on every twin's source."""
    repo = Path(core.__file__).parents[2]
    spec = importlib.util.spec_from_file_location("_mq_hatch_build", repo / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    sources = hook.sources(repo)
    assert len(sources) == len(core.EXTENSIONS)
    for pyx in sources:
        assert hook.source_stamp(pyx) == core.source_digest(pyx)
