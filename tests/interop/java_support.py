"""The RocketMQ 4.9.8 Java client, built at ``~/rmq-real`` (or ``$RMQ_HOME``) by
``../shared/tools/rmq-real/build.sh``: its classpath with the probes in ``java/``
compiled, and a way to run one. It cannot run in CI (no Maven Central, a from-source
build); tests using it skip, saying so, where it is absent."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

RMQ_HOME = Path(os.environ.get("RMQ_HOME", Path.home() / "rmq-real"))
PROBES = Path(__file__).with_name("java")


def java_classpath(out: Path) -> str:
    """The 4.9.8 client's classpath with every probe compiled into ``out``; skips the
    test where the build (or a JDK) is absent."""
    if not (RMQ_HOME / "classes").is_dir() or not shutil.which("java") or not shutil.which("javac"):
        pytest.skip(f"no RocketMQ 4.9.8 Java build at {RMQ_HOME} (or no JDK)")
    jars = sorted(str(j) for j in (RMQ_HOME / "lib").glob("*.jar"))
    cp = os.pathsep.join([str(RMQ_HOME / "classes"), *jars])
    sources = sorted(str(p) for p in PROBES.glob("*.java"))
    done = subprocess.run(
        ["javac", "-nowarn", "-cp", cp, "-d", str(out), *sources],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return os.pathsep.join([cp, str(out)])


def java_command(cp: str, home: Path, main: str, *args: str) -> list[str]:
    """``java`` running ``main`` with its user home (logs, local offsets) under ``home``;
    the tools read their logback config from the build's conf/."""
    opts = [
        "-Xmx128m", f"-Duser.home={home}", f"-Drocketmq.home.dir={RMQ_HOME}",
        "-Drocketmq.client.logUseSlf4j=false", f"-Drocketmq.client.logRoot={home}/logs",
    ]  # fmt: skip
    quiet = RMQ_HOME / "conf" / "logback_quiet.xml"
    if quiet.is_file():
        opts.append(f"-Dlogback.configurationFile={quiet}")
    return ["java", *opts, "-cp", cp, main, *args]


def java_env() -> dict[str, str]:
    return {**os.environ, "ROCKETMQ_HOME": str(RMQ_HOME)}
