"""Per-version environments: one isolated Python environment per Triton release, made with uv on first
use and cached, or the user's own interpreter or wheel. layoutfuzz itself is not installed into them:
its packages reach them through a folder of links to the running code, so every environment runs the
same harness and only Triton (and what it pulls in) differs."""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from layoutfuzz.harness.triton_compat import ENV, cache_root, folder_version, parse_version

PACKAGES = ("harness", "oracles", "generators", "gpu", "reports")  # what the linked source folder holds
READY = "layoutfuzz-ready.json"  # written last: an environment without it is half made and is remade
RELEASES = ("3.6.0", "3.7.0", "3.7.1", "3.8.0", "3.9.0")  # the releases `bisect` orders (all install with pip)


class EnvironmentFailure(Exception):
    """An environment could not be made or used (what failed, in one line)."""


@dataclass(frozen=True)
class TritonEnvironment:
    """An interpreter with one Triton, ready to run ``python -m layoutfuzz.harness.cli`` with layoutfuzz's code."""

    label: str  # "3.9.0", or the name of the user's wheel or interpreter
    python: Path
    triton: str  # triton.__version__ as that interpreter reports it
    variables: tuple[tuple[str, str], ...] = ()  # set for its commands (a folder of prebuilt kernels)

    def command(self, *args: str) -> list[str]:
        return [str(self.python), "-m", "layoutfuzz.harness.cli", *args]

    def env(self) -> dict[str, str]:
        """The environment variables its commands run with: layoutfuzz's code first on the path."""
        paths = [str(linked_source())] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "PYTHONNOUSERSITE": "1", **dict(self.variables)}


def linked_source() -> Path:
    """A folder holding ``layoutfuzz/`` with links to the packages of the running layoutfuzz (editable checkout
    or installed), without anything else of its site-packages (which would bring this interpreter's Triton)."""
    homes = {name: Path(importlib.import_module(f"layoutfuzz.{name}").__file__).resolve().parent for name in PACKAGES}
    folder = cache_root() / "source" / hashlib.sha1(str(homes["harness"]).encode()).hexdigest()[:12]
    namespace = folder / "layoutfuzz"  # no __init__.py: layoutfuzz is a namespace package, as installed
    namespace.mkdir(parents=True, exist_ok=True)
    for name, home in homes.items():
        link = namespace / name
        if not link.is_symlink() or link.resolve() != home:
            tmp = namespace / f".{name}.{os.getpid()}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(home)
            os.replace(tmp, link)
    return folder


def requirements() -> list[str]:
    """layoutfuzz's own run-time requirements, less Triton (each environment brings its own)."""
    try:
        listed = metadata.requires("layoutfuzz") or []
    except metadata.PackageNotFoundError:
        listed = ["numpy>=1.26", "pandas>=2.1", "tabulate>=0.9", "hypothesis>=6.100", "pebble>=5.0", "tqdm>=4.66", "tomli-w>=1.0", "jsonschema>=4.18"]
    plain = [r.split(";")[0].strip() for r in listed if "extra ==" not in r]
    return [r for r in plain if not re.match(r"(triton|uv)\b", r)]


def uv() -> str:
    """The uv executable (the ``uv`` package installs it; PATH otherwise)."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except Exception:
        found = shutil.which("uv")
        if not found:
            raise EnvironmentFailure("uv is not installed: pip install uv") from None
        return found


def check_release(version: str) -> str:
    """``version`` if it names a Triton release layoutfuzz supports (3.6.0 or newer), else an error."""
    try:
        parsed = parse_version(version)
    except ValueError:
        raise EnvironmentFailure(f"not a Triton version: {version!r} (use e.g. 3.9.0)") from None
    if not re.fullmatch(r"\d+\.\d+\.\d+", version.strip()):
        raise EnvironmentFailure(f"give a full release, e.g. 3.9.0, not {version!r}")
    if parsed < (3, 6, 0):
        raise EnvironmentFailure(f"Triton {version} is older than 3.6.0, the oldest layoutfuzz supports")
    return version.strip()


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One maker per environment at a time (parallel matrix runs, shards)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _run(command: list[str], what: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-6:])
        raise EnvironmentFailure(f"{what} failed:\n{tail}")
    return done.stdout


def probe(python: Path) -> str:
    """The Triton version ``python`` imports, checking that it can also run layoutfuzz's code."""
    env = TritonEnvironment("probe", python, "").env()
    code = "import triton, numpy, pandas, pebble, tabulate, hypothesis, tqdm, tomli_w, jsonschema; print(triton.__version__)"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise EnvironmentFailure(f"{python} cannot run layoutfuzz with Triton: {last}")
    return done.stdout.strip().splitlines()[-1]


def _make(folder: Path, packages: list[str], label: str) -> TritonEnvironment:
    """The environment in ``folder`` with ``packages`` and layoutfuzz's requirements (made if absent)."""
    python = folder / "bin" / "python"
    with _locked(folder):
        ready = folder / READY
        if ready.exists():
            made = json.loads(ready.read_text())
            if made.get("requirements") != requirements():  # made by an older layoutfuzz: its new requirements added
                _run([uv(), "pip", "install", "-q", "--python", str(python), *requirements()], "adding layoutfuzz's requirements")
                _write_ready(ready, {**made, "requirements": requirements()})
            return TritonEnvironment(label, python, made["triton"])
        shutil.rmtree(folder, ignore_errors=True)
        print(f"layoutfuzz: making the environment for Triton {label} in {folder} (once)", file=sys.stderr)
        try:
            _run([uv(), "venv", "-q", "--python", sys.executable, str(folder)], f"uv venv {folder}")
            _run([uv(), "pip", "install", "-q", "--python", str(python), *packages, *requirements()], f"installing {' '.join(packages)}")
            version = probe(python)
        except BaseException:  # a half-made environment is never left behind
            shutil.rmtree(folder, ignore_errors=True)
            raise
        _write_ready(ready, {"triton": version, "packages": packages, "requirements": requirements()})
        return TritonEnvironment(label, python, version)


def _write_ready(ready: Path, data: dict) -> None:
    """The environment's record, written whole or not at all (it marks the environment as made)."""
    tmp = ready.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, ready)


def _python_tag() -> str:
    return f"py{sys.version_info.major}{sys.version_info.minor}"


def for_release(version: str) -> TritonEnvironment:
    """The cached environment of a Triton release from the package index."""
    version = check_release(version)
    return _make(cache_root() / "envs" / f"triton-{version}-{_python_tag()}", [f"triton=={version}"], version)


def for_wheel(wheel: str | Path) -> TritonEnvironment:
    """An environment with the user's own Triton wheel (cached by the wheel's content)."""
    wheel = Path(wheel).expanduser().resolve()
    if not wheel.is_file() or wheel.suffix != ".whl":
        raise EnvironmentFailure(f"{wheel} is not a wheel file")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()[:12]
    return _make(cache_root() / "envs" / f"wheel-{digest}-{_python_tag()}", [str(wheel)], wheel.name)


def for_python(python: str | Path) -> TritonEnvironment:
    """The user's own interpreter, which has Triton and layoutfuzz's requirements installed."""
    path = Path(shutil.which(str(python)) or python).expanduser().absolute()
    if not path.exists():
        raise EnvironmentFailure(f"no interpreter at {python}")
    if not path.is_file() or not os.access(path, os.X_OK):
        raise EnvironmentFailure(f"{python} is not an executable interpreter")
    version = probe(path)
    return TritonEnvironment(f"{version} ({path})", path, version)


def for_kernels(folder: Path) -> TritonEnvironment:
    """This interpreter running the kernels another Triton compiled ahead (``DIR/triton-VERSION``)."""
    version = folder_version(folder)
    return TritonEnvironment(version, Path(sys.executable), version, ((ENV, str(folder.resolve())),))


def kernel_folders(root: str | Path, versions: list[str] | None = None) -> list[Path]:
    """The per-version folders of prebuilt kernels under ``root`` (those of ``versions`` if given), oldest first."""
    root = Path(root)
    found = {p.name.removeprefix("triton-"): p for p in root.glob("triton-*") if p.is_dir()} if root.is_dir() else {}
    for version, folder in found.items():  # a folder another tool (or a typo) made: named, not a traceback
        try:
            parse_version(version)
        except ValueError as exc:
            raise EnvironmentFailure(f"{folder} is not a folder of prebuilt kernels, triton-VERSION: {exc}") from None
    if not found:
        raise EnvironmentFailure(f"no prebuilt kernels in {root} (make them with `layoutfuzz kernels --triton ... --out {root}`)")
    if versions is not None:
        missing = [v for v in versions if v not in found]
        if missing:
            raise EnvironmentFailure(f"{root} holds no kernels of Triton {', '.join(missing)} (it has {', '.join(sorted(found))})")
        found = {v: found[v] for v in versions}
    return [found[v] for v in sorted(found, key=parse_version)]


def cached() -> list[Path]:
    """The environments made so far."""
    root = cache_root() / "envs"
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []


def prune(keep: set[Path] = frozenset()) -> list[Path]:
    """Remove the cached environments not in ``keep``; returns what was removed."""
    gone = []
    for folder in cached():
        if folder.resolve() in {k.resolve() for k in keep}:
            continue
        with _locked(folder):
            shutil.rmtree(folder, ignore_errors=True)
        gone.append(folder)
    return gone


def release_range(spec: str) -> list[str]:
    """The releases a spec names, oldest first: '3.6.0..3.9.0' (the known releases between, inclusive)
    or '3.6.0,3.8.0,3.9.0' (exactly these)."""
    if ".." in spec:
        low, high = (check_release(v) for v in spec.split("..", 1))
        if parse_version(low) > parse_version(high):
            raise EnvironmentFailure(f"the range {spec!r} runs backwards: oldest first, e.g. 3.6.0..3.9.0")
        chosen = [v for v in RELEASES if parse_version(low) <= parse_version(v) <= parse_version(high)]
        for end in (low, high):
            if end not in chosen:
                chosen.append(end)
    else:
        chosen = [check_release(v) for v in spec.split(",") if v.strip()]
    if not chosen:
        raise EnvironmentFailure(f"no Triton versions in {spec!r}")
    return sorted(dict.fromkeys(chosen), key=parse_version)
