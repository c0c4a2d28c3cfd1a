"""Builds mq's compiled core: the few ``_*.pyx`` files that sit beside their pure twins.

Two ways in, one piece of work:

* hatchling runs :class:`CustomBuildHook` for every wheel (``pip install .``, ``pip wheel``,
  and the editable wheel of ``pip install -e .``). A standard wheel gets the extensions
  built under ``build/cython`` and added to the wheel; an editable one gets them next to
  their ``.pyx`` in the source tree, where the editable install imports from.
* ``make`` runs this file as a script to rebuild an edited ``.pyx`` in place in seconds,
  without a pip round trip (``python hatch_build.py``).

The compiled core is optional by design: without Cython or without a working C compiler
the build goes on as a pure-Python wheel, with one line saying so, and mq runs its pure
twins (``mqcore.common.core`` reports which core runs). Nothing here may fail an install.

Each extension is compiled with its source's sha256 baked in (``MQ_SOURCE_STAMP``), so a
source checkout notices at import when a ``.pyx`` was edited after its build and falls
back to the pure twin instead of running stale code.

Only these files are compiled, straight with the C compiler at ``-O2`` (no setuptools): a
full build takes seconds.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # run as a script by make, where hatchling need not be installed
    BuildHookInterface = object  # type: ignore[assignment,misc]

ROOT = Path(__file__).resolve().parent
PACKAGE = "mqcore"


def sources(root: Path = ROOT) -> list[Path]:
    """The compiled twins: every ``_*.pyx`` under the package."""
    return sorted((root / PACKAGE).rglob("_*.pyx"))


def source_stamp(pyx: Path) -> str:
    """What the extension carries and :mod:`mqcore.common.core` checks at import: the
    sha256 of the ``.pyx`` followed by every ``.pxd`` of its package tree (shared inline
    code the twins cimport), so an edited ``.pxd`` makes each twin stale, not only the
    ``.pyx`` files that changed. The same rule is written out in ``check_stamp``."""
    digest = hashlib.sha256(pyx.read_bytes())
    for pxd in shared_declarations(pyx):
        digest.update(pxd.read_bytes())
    return digest.hexdigest()


def shared_declarations(pyx: Path) -> list[Path]:
    """The ``.pxd`` files under the top package holding ``pyx`` (the topmost folder with
    an ``__init__.py``), in path order."""
    top = pyx.parent
    while (top.parent / "__init__.py").exists():
        top = top.parent
    return sorted(top.rglob("*.pxd"))


class BuildResult:
    """What :func:`build` did. (A plain class: hatchling loads this file without entering
    it in ``sys.modules``, which a dataclass needs.)"""

    def __init__(self) -> None:
        self.built: list[Path] = []
        """The extension files written (absolute paths)."""
        self.note = ""
        """Why the core was not compiled (empty when it was)."""
        self.current: list[Path] = []
        """Of ``built``, those already compiled from their present source (in place)."""


def _compiler() -> list[str]:
    """The C compiler as a command, ``$CC`` first, as Python's own builds pick it."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shlex.split(cc)


def _current(pyx: Path, target: Path) -> bool:
    """True when ``target`` was compiled from ``pyx`` as it is now: its stamp (a C string in
    the extension) is the source's hash. An in-place rebuild then compiles only what
    changed, so ``make`` after editing one ``.pyx`` takes a second or two."""
    try:
        return source_stamp(pyx).encode() in target.read_bytes()
    except OSError:
        return False


def _compiler_fails(work: Path) -> str:
    """Why the C compiler cannot build an extension ("" when it can): a one-line probe
    before any Cython work, so a machine without a compiler loses no time."""
    probe = work / "probe.c"
    probe.write_text("int mq_probe(void) { return 0; }\n")
    cmd = [*_compiler(), "-shared", "-fPIC", str(probe), "-o", str(work / "probe.so")]
    try:
        proc = subprocess.run(cmd, capture_output=True, check=False)
    except OSError as exc:
        return f"no C compiler ({' '.join(_compiler())}: {exc.strerror})"
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines() or ["no output"]
        return f"the C compiler does not work ({' '.join(_compiler())}: {lines[0]})"
    return ""


def build(root: Path = ROOT, out_dir: Path | None = None) -> BuildResult:
    """Compile every ``.pyx`` under ``root``: in place (``out_dir`` None) or into
    ``out_dir`` with the package layout. Never raises for a missing tool: the result's
    ``note`` says why nothing was built."""
    pyx_files = sources(root)
    result = BuildResult()
    if not pyx_files:
        return result
    if os.environ.get("MQ_NO_EXTENSIONS"):
        result.note = "MQ_NO_EXTENSIONS is set: building the pure-Python mq"
        return result
    try:
        from Cython.Compiler.Main import compile as cython_compile
    except ImportError:
        result.note = "Cython is not installed: building the pure-Python mq (same behaviour)"
        return result
    work = root / "build" / "cython"
    try:
        work.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only source tree: the C files go to a temporary directory
        work = Path(tempfile.mkdtemp(prefix="mq-cython-"))
    broken = _compiler_fails(work)
    if broken:
        result.note = f"{broken}: building the pure-Python mq (same behaviour)"
        return result
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    include = sysconfig.get_paths()["include"]
    c_files: list[tuple[Path, Path]] = []
    for pyx in pyx_files:  # first every translation: a Cython error builds nothing
        rel = pyx.relative_to(root)
        in_place = pyx.parent / (pyx.stem + suffix)
        if _current(pyx, in_place):
            # Built in place from this very source (make, an editable install): nothing
            # to compile; a wheel takes a copy.
            target = in_place
            if out_dir is not None:
                target = out_dir / rel.parent / in_place.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(in_place, target)
            result.built.append(target)
            result.current.append(target)
            continue
        c_file = work / rel.with_suffix(".c")
        c_file.parent.mkdir(parents=True, exist_ok=True)
        try:
            compiled = cython_compile(
                str(pyx),
                output_file=str(c_file),
                language_level=3,
                quiet=True,
                include_path=[str(root)],  # the shared .pxd files, by package path
            )
        except Exception as exc:  # a Cython error is a bug in the .pyx: say which
            result.note = f"Cython failed on {rel} ({exc}): building the pure-Python mq"
            return result
        if getattr(compiled, "num_errors", 0):
            result.note = f"Cython failed on {rel}: building the pure-Python mq"
            return result
        c_files.append((pyx, c_file))
    jobs: list[tuple[Path, subprocess.Popen[bytes], Path]] = []
    for pyx, c_file in c_files:  # then the C compiler, all files at once
        rel = pyx.relative_to(root)
        target_dir = pyx.parent if out_dir is None else out_dir / rel.parent
        target_dir.mkdir(parents=True, exist_ok=True)
        target = target_dir / (pyx.stem + suffix)
        tmp_target = target.with_name(target.name + ".tmp")
        cmd = [
            *_compiler(),
            "-shared",
            "-fPIC",
            "-O2",
            "-fno-strict-aliasing",
            "-w",
            f"-I{include}",
            f'-DMQ_SOURCE_STAMP="{source_stamp(pyx)}"',
            str(c_file),
            "-o",
            str(tmp_target),
        ]
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except OSError as exc:
            for _, started, _ in jobs:
                started.communicate()
            result.note = f"no C compiler ({exc.strerror}): building the pure-Python mq"
            return result
        jobs.append((target, proc, tmp_target))
    failed = ""
    for target, proc, tmp_target in jobs:
        output, _ = proc.communicate()
        if proc.returncode != 0 and not failed:
            lines = output.decode(errors="replace").strip().splitlines()
            errors = [line for line in lines if "error" in line] or lines or ["no output"]
            failed = f"the C compiler failed ({' '.join(_compiler())}: {errors[0]})"
        if proc.returncode == 0:
            tmp_target.replace(target)  # atomic: a running process keeps its mapped copy
            result.built.append(target)
        else:
            tmp_target.unlink(missing_ok=True)
    if failed:
        result.note = f"{failed}: building the pure-Python mq (same behaviour)"
    return result


class CustomBuildHook(BuildHookInterface):  # type: ignore[misc,valid-type]
    """hatchling's entry: compiles for the ``wheel`` target, standard or editable."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        editable = version == "editable"
        out_dir = None
        if not editable:  # the wheel's extensions, kept until finalize has packed them
            self._out_dir = out_dir = Path(tempfile.mkdtemp(prefix="mq-wheel-core-"))
        result = build(root, out_dir)
        if result.note:
            self.app.display_warning(f"mq: {result.note}")
        if not result.built:
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if out_dir is not None:
            for path in result.built:
                build_data["force_include"][str(path)] = str(path.relative_to(out_dir))
        self.app.display_info(f"mq: compiled core built ({len(result.built)} extensions)")

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        out_dir = getattr(self, "_out_dir", None)
        if out_dir is not None:
            shutil.rmtree(out_dir, ignore_errors=True)


def main() -> int:
    """``python hatch_build.py [--quiet]``: rebuild the extensions in place (what ``make``
    runs); ``--quiet`` names only what it compiled."""
    quiet = "--quiet" in sys.argv[1:]
    result = build()
    for path in result.built:
        current = path in result.current
        if not (quiet and current):
            print(f"{'up to date' if current else 'built'}: {path.relative_to(ROOT)}")
    if result.note:
        print(f"mq: {result.note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
