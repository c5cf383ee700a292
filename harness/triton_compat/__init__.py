"""What differs between the Triton releases layoutfuzz supports (3.6.0 and later): one small module
per concern, so that a target asks "how do I do X on this Triton" and never checks a version itself.

- ``builder``: a Gluon op builder with a module and an insertion point (3.9 needs one for its queries).
- ``layouts``: what ``to_linear_layout`` returns (a distributed or a shared linear layout) and the
  register broadcasts 3.9 drops.
- ``gluon_ops``: Gluon functions renamed between releases (TMA copies, memdesc reinterpret).
- ``lowering``: second lowerings of one operation (3.9's forced warp shuffle).
- ``ttgir``: what the TTGIR layoutfuzz writes itself must say on each release (module attributes).
- ``barriers``: a TMA barrier of each CTA's own (``allocate_mbarrier`` from 3.7.1), as Triton's own tests take it.
- ``gluon_layouts``: the oracle's layouts as Gluon's, and the base of the targets that ask Gluon; ``gluon_kernels``:
  the Gluon kernels ``triton.compile`` compiles.

Which Triton is under test is decided here too: the one whose prebuilt kernels ``$LAYOUTFUZZ_KERNELS`` names
(``gpu.prebuilt``), else the one this process imports; and where layoutfuzz caches what it makes (``cache_root``).
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

OLDEST = (3, 6, 0)  # the oldest release layoutfuzz supports
ENV = "LAYOUTFUZZ_KERNELS"  # a folder of prebuilt kernels (DIR/triton-VERSION): the Triton that compiled them is under test


def active_folder() -> Path | None:
    """The prebuilt kernels this process runs ($LAYOUTFUZZ_KERNELS), or None to compile with Triton."""
    folder = os.environ.get(ENV)
    return Path(folder) if folder else None


def folder_version(folder: Path) -> str:
    """The Triton version whose kernels a folder holds ('.../triton-3.9.0' -> '3.9.0')."""
    return folder.name.removeprefix("triton-")


def cache_root() -> Path:
    """Where environments live: $LAYOUTFUZZ_CACHE, else $XDG_CACHE_HOME/layoutfuzz, else ~/.cache/layoutfuzz."""
    if os.environ.get("LAYOUTFUZZ_CACHE"):
        return Path(os.environ["LAYOUTFUZZ_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "layoutfuzz"


def parse_version(text: str) -> tuple[int, int, int]:
    """(major, minor, patch) of '3.9.0', '3.10.0+git1234' or '3.8.0rc1' (pre-release and local parts dropped)."""
    match = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not match:
        raise ValueError(f"not a Triton version: {text!r}")
    return int(match[1]), int(match[2]), int(match[3] or 0)


@cache
def version() -> tuple[int, int, int]:
    """The version of the Triton under test: the one that compiled the prebuilt kernels this process runs
    (``$LAYOUTFUZZ_KERNELS``, ``gpu.prebuilt``), else the one it imports."""
    folder = active_folder()
    if folder is not None:
        return parse_version(folder_version(folder))
    import triton

    return parse_version(triton.__version__)


def at_least(text: str) -> bool:
    """Whether the Triton under test is ``text`` or newer."""
    return version() >= parse_version(text)
