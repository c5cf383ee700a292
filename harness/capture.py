"""What a library writes to file descriptor 2 while a call runs (MLIR and LLVM diagnostics bypass
Python's ``sys.stderr``), so that a compile error's message, not just ``PassManager::run failed``,
names its root cause."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def stderr_text(keep: int = 16384) -> Iterator[list[str]]:
    """Captures fd 2 for the block; the list gets its text (the last ``keep`` characters). Where fd 2 is a file (a
    campaign worker's log) it is read back from there, so that an abort inside the block (an LLVM fatal error) still
    leaves its message in the log for the crash's signature; elsewhere fd 2 goes to a temporary file and the text is
    written back to fd 2 after the block."""
    out: list[str] = []
    sys.stderr.flush()
    if _is_regular_file(2):
        start = os.lseek(2, 0, os.SEEK_CUR)
        try:
            yield out
        finally:
            sys.stderr.flush()
            with open(f"/proc/self/fd/{2}", "rb") as log:
                log.seek(start)
                out.append(log.read().decode(errors="replace")[-keep:])
        return
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield out
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            data = sink.read()
            os.write(2, data)
            out.append(data.decode(errors="replace")[-keep:])


def _is_regular_file(fd: int) -> bool:
    """Whether ``fd`` is a regular file that this process can read back through /proc (Linux)."""
    import stat

    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.path.exists(f"/proc/self/fd/{fd}")
    except OSError:
        return False
