"""The wheel as a user gets it: built from the working tree, installed into a fresh venv.

No network: the wheel is built without build isolation (hatchling is a dev dependency) and
installed with ``--no-deps``; the venv reaches the runtime dependencies already installed
for the tests through a ``.pth`` line, so what runs is the wheel's own ``mqcli``/``mqcore``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNTIME_DEPS = ("typer", "rich", "textual", "prompt_toolkit", "orjson", "yaml", "uvloop")
COMPLETIONS = {
    "bash": "share/bash-completion/completions/mq",
    "zsh": "share/zsh/site-functions/_mq",
    "fish": "share/fish/vendor_completions.d/mq.fish",
}

PIP = (sys.executable, "-m", "pip")

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def mq(self) -> Path:
        return self.venv / "bin" / "mq"


def _run(args: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        **kwargs,  # type: ignore[arg-type]
    )


def _clean_env(venv: Path) -> dict[str, str]:
    """The environment of a user whose PATH starts at the venv: no PYTHONPATH pointing
    back into the repository, no MANPATH overriding man's own search."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MANPATH")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["NO_COLOR"] = "1"
    return env


def _dependency_dirs() -> list[str]:
    """Where this interpreter finds mq's runtime dependencies (one site dir, usually)."""
    dirs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    for name in RUNTIME_DEPS:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            dirs.add(str(Path(spec.origin).parent.parent))
    return sorted(dirs)


def _build_and_install(tmp: Path, env: dict[str, str] | None = None) -> Installed:
    built = _run(
        [*PIP, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp / "dist", REPO],
        env=env,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp / "dist").glob("mq-*.whl")
    venv = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", venv])
    assert made.returncode == 0, made.stderr
    site = Path(
        _run(
            [
                venv / "bin" / "python",
                "-c",
                "import sysconfig; print(sysconfig.get_path('purelib'))",
            ]
        ).stdout.strip()
    )
    (site / "mq_test_dependencies.pth").write_text("\n".join(_dependency_dirs()) + "\n")
    done = _run(
        [
            *PIP,
            "--python",
            venv / "bin" / "python",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            wheel,
        ]
    )
    assert done.returncode == 0, done.stderr
    return Installed(wheel, venv)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return _build_and_install(tmp_path_factory.mktemp("wheel"))


def _compiler_works() -> bool:
    """The build hook's own probe (``hatch_build._compiler_fails``): a compiler that is
    on the PATH but cannot build (``CC=false``) gives a pure wheel too."""
    spec = importlib.util.spec_from_file_location("_mq_hatch_build", REPO / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    with tempfile.TemporaryDirectory() as work:
        return not hook._compiler_fails(Path(work))


def test_the_wheel_carries_the_license_and_its_metadata(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as whl:
        names = whl.namelist()
        (license_name,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert whl.read(license_name).decode() == (REPO / "LICENSE").read_text()
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = whl.read(meta_name).decode()
    assert "Apache License" in (REPO / "LICENSE").read_text()
    assert "License-Expression: Apache-2.0" in metadata
    assert "Author: mq developers" in metadata
    assert "Project-URL: " in metadata and "Keywords: " in metadata
    assert "mqcli/tui/mq.tcss" in names  # package data the TUI loads at start
    assert "mqcli/roothelp.txt" in names  # what `mq --help` draws without typer


def test_mq_version_is_the_installed_distribution_version(installed: Installed) -> None:
    env = _clean_env(installed.venv)
    code = "import mqcli, mqcore; print(mqcli.__file__); print(mqcore.__file__)"
    where = _run([installed.python, "-c", code], env=env, cwd=installed.venv)
    module_files = where.stdout.split()
    assert len(module_files) == 2, where.stderr
    for module_file in module_files:
        assert Path(module_file).is_relative_to(installed.venv), where.stdout + where.stderr
    meta = _run(
        [installed.python, "-c", "import importlib.metadata as m; print(m.version('mq'))"],
        env=env,
        cwd=installed.venv,
    )
    version = meta.stdout.strip()
    assert installed.wheel.name.startswith(f"mq-{version}-"), (version, installed.wheel.name)
    for flag in ("--version", "-V"):
        shown = _run([installed.mq, flag], env=env, cwd=installed.venv)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.splitlines()[0] == f"mq {version}", shown.stdout


@pytest.mark.skipif(not _compiler_works(), reason="no working C compiler: the wheel is pure")
def test_the_wheel_carries_the_compiled_core_and_runs_it(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as whl:
        names = whl.namelist()
    extensions = [n for n in names if n.endswith(".so")]
    assert "mqcore/protocol/_header_binary.pyx" in names
    assert any(n.startswith("mqcore/protocol/_header_binary.") for n in extensions), names
    assert not installed.wheel.name.endswith("-none-any.whl")  # a platform wheel
    shown = _run([installed.mq, "--version"], env=_clean_env(installed.venv))
    assert shown.stdout.splitlines()[1] == "core: compiled", shown.stdout + shown.stderr


def test_a_wheel_built_without_a_c_compiler_installs_and_runs_pure(tmp_path: Path) -> None:
    """CC=false: no compiler works, yet the build succeeds, as a pure wheel."""
    pure = _build_and_install(tmp_path, env={**os.environ, "CC": "false"})
    assert pure.wheel.name.endswith("-py3-none-any.whl"), pure.wheel.name
    with zipfile.ZipFile(pure.wheel) as whl:
        assert not [n for n in whl.namelist() if n.endswith(".so")]
    env = _clean_env(pure.venv)
    shown = _run([pure.mq, "--version"], env=env, cwd=pure.venv)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[1] == "core: pure (not built)", shown.stdout
    code = (
        "from mqcore.protocol import RemotingCommand, FrameDecoder, encode, SerializeType\n"
        "cmd = RemotingCommand.request(10, {'topic': 'T'}, b'x',"
        " serialize_type=SerializeType.ROCKETMQ)\n"
        "d = FrameDecoder(); d.receive_data(encode(cmd)); got = d.next_command()\n"
        "print(dict(got.ext_fields), got.body)"
    )
    ran = _run([pure.python, "-c", code], env=env, cwd=pure.venv)
    assert ran.stdout.strip() == "{'topic': 'T'} b'x'", ran.stdout + ran.stderr


def test_mq_help_runs_from_the_wheel(installed: Installed) -> None:
    shown = _run([installed.mq, "--help"], env=_clean_env(installed.venv), cwd=installed.venv)
    assert shown.returncode == 0, shown.stderr
    for command in ("produce", "consume", "topic", "store"):
        assert command in shown.stdout


def test_man_pages_are_installed_under_the_prefix(installed: Installed) -> None:
    man1 = installed.venv / "share" / "man" / "man1"
    committed = sorted(p.name for p in (REPO / "man").glob("*.1"))
    assert "mq.1" in committed
    assert sorted(p.name for p in man1.glob("*.1")) == committed
    assert (man1 / "mq-produce.1").read_text() == (REPO / "man" / "mq-produce.1").read_text()


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_man_finds_mq_through_path(installed: Installed) -> None:
    """`man mq` after `pip install`: man derives <prefix>/share/man from <prefix>/bin on PATH."""
    for page in ("mq", "mq-produce"):
        found = _run(["man", "-w", page], env=_clean_env(installed.venv))
        assert found.returncode == 0, found.stderr
        assert Path(found.stdout.strip()) == installed.venv / f"share/man/man1/{page}.1"


@pytest.mark.parametrize("shell", sorted(COMPLETIONS))
def test_completion_scripts_are_installed_where_shells_look(
    installed: Installed, shell: str
) -> None:
    target = installed.venv / COMPLETIONS[shell]
    assert target.read_text() == (REPO / "completions" / f"mq.{shell}").read_text()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_installed_bash_completion_registers_for_mq(installed: Installed) -> None:
    script = installed.venv / COMPLETIONS["bash"]
    done = _run(["bash", "--norc", "-c", f"source '{script}' && complete -p mq"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(" mq"), done.stdout
