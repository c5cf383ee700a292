"""Files written atomically: a reader sees the old file or the new, never a part of one."""

from __future__ import annotations

import ctypes
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path


def write_atomically(path: Path, text: str | bytes, durable: bool = True) -> None:
    """Writes ``text`` (or bytes) to ``path`` so that readers see the old file or the new, never a part; ``durable``
    also flushes it to disk before it takes the name (a cache, whose lost file costs only its recomputation, need not)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; readers expect the user's umask (0644)
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as handle:
            handle.write(text)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_many_atomically(files: Sequence[tuple[Path, str]]) -> None:
    """``write_atomically`` for many files with two flushes of their filesystem in all, not one per file (a batch of
    reports at thousands of cases a second): every text is on disk before any file appears under its name, and
    every name before this returns."""
    if len(files) < 2:
        for path, text in files:
            write_atomically(path, text)
        return
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((tmp, path))
            os.fchmod(fd, 0o666 & ~_umask())
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
        sync_filesystem(files[0][0].parent)
        while staged:
            tmp, path = staged[-1]
            os.replace(tmp, path)
            staged.pop()
        sync_filesystem(files[0][0].parent)
    finally:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)


def sync_filesystem(directory: Path) -> None:
    """Flushes the filesystem that holds ``directory`` (Linux ``syncfs``; elsewhere ``sync``)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        syncfs = getattr(ctypes.CDLL(None, use_errno=True), "syncfs", None)
        if syncfs is None or syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
