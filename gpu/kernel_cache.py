"""The kernel cache of the Triton GPU targets: each case's Gluon kernel compiled once, straight through
``triton.compile`` (no JIT, no launcher stub), and filed by content hash, so that a campaign's workers compile
side by side on every CPU core, launch through cuda.core in microseconds, and never compile one kernel twice.
Cases whose parameters are the same share one kernel with different data (each case's data follows its index).

The cache is a folder of prebuilt kernels (``gpu.prebuilt``) that fills itself: ``$LAYOUTFUZZ_CACHE/kernels/
triton-VERSION/BUILD``, where BUILD hashes the Triton build and the probes' source (Gluon's and the written TTGIR's), so a rebuilt Triton or an
edited probe never finds a stale kernel."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

from layoutfuzz.gpu.prebuilt import CompiledKernel
from layoutfuzz.harness.scratch import memory_root
from layoutfuzz.reports.files import write_atomically

MAX_BYTES = 1 << 30  # the kernel cache is pruned to its most recently used GiB
PRUNE_EVERY = 500  # kernels a worker files between prunings
_written = 0  # kernels this process filed
JIT = "LAYOUTFUZZ_TRITON_JIT"  # set to 1: launch through Triton's JIT instead (the reference the cache is tested against)


@cache
def _build() -> str:
    """This Triton build and these probes, hashed."""
    from triton.runtime.cache import triton_key

    from layoutfuzz.gpu import direct_ttgir, gluon_probes
    from layoutfuzz.harness.triton_compat import ttgir

    probes = b"".join(Path(module.__file__).read_bytes() for module in (gluon_probes, direct_ttgir, ttgir))
    return hashlib.sha256(triton_key().encode() + probes).hexdigest()[:16]


def kernels_root() -> Path:
    """Where cached kernels of every Triton build live."""
    from layoutfuzz.harness.triton_compat import cache_root

    return cache_root() / "kernels"


def cache_folder() -> Path:
    """This Triton build's folder of cached kernels."""
    import triton

    return kernels_root() / f"triton-{triton.__version__}" / _build()


def through_jit() -> bool:
    """Whether kernels go through Triton's JIT and launcher rather than the cache and cuda.core."""
    return os.environ.get(JIT, "") not in ("", "0")


SCRATCH_ROOM = 1 << 30  # of memory-backed room for Triton's scratch cache, else it goes to the temporary folder


@contextlib.contextmanager
def scratch_triton_cache() -> Iterator[None]:
    """Triton's own on-disk cache pointed, for one compile, at a folder removed after it: the kernel cache files the
    kernel, and Triton's copy of every stage of every distinct kernel (never pruned) would fill the disk in a night."""
    import triton

    with tempfile.TemporaryDirectory(prefix="layoutfuzz-triton-", dir=memory_root(SCRATCH_ROOM)) as folder, triton.knobs.cache.scope():
        triton.knobs.cache.dir = folder
        yield


def cached_kernel(path: Path, compile: Callable[[], CompiledKernel]) -> CompiledKernel:
    """The kernel filed at ``path`` (a ``kernel_path`` under ``cache_folder()``), else ``compile()``'s, compiled by this
    process's Triton and filed (a compiler's refusal is filed too: it is the answer)."""
    global _written
    try:
        kernel = CompiledKernel.from_json(path.read_text())
    except (OSError, ValueError, TypeError, KeyError):  # absent, or not a kernel file (a damaged disk): compile
        with scratch_triton_cache():
            kernel = compile()
        with contextlib.suppress(OSError):  # a cache that cannot be written (read-only, full) only costs compiles
            write_atomically(path, kernel.to_json(), durable=False)  # a kernel lost to a power cut is compiled again
        _written += 1
        if _written % PRUNE_EVERY == 0:
            prune(kernels_root(), MAX_BYTES)
        return kernel
    with contextlib.suppress(OSError):  # used now: the last to go when the cache is pruned (unless it is read-only)
        os.utime(path)
    return kernel


def prune(folder: Path, max_bytes: int) -> int:
    """Deletes the least recently used kernel files under ``folder`` until the rest fit in ``max_bytes``;
    returns how many went. Safe beside other workers: a kernel deleted under one is compiled again."""
    files = []
    for path in folder.rglob("*.json"):
        try:
            stat = path.stat()
        except OSError:
            continue
        files.append((stat.st_mtime, stat.st_size, path))
    files.sort(reverse=True)
    kept, removed = 0, 0
    for _, size, path in files:
        kept += size
        if kept > max_bytes:
            path.unlink(missing_ok=True)
            removed += 1
    return removed
