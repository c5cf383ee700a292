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
    """Captures fd 2 for the block; the list gets its text (the last ``keep`` characters), which is
    also written back to fd 2 so that a crash's log still holds it."""
    out: list[str] = []
    sys.stderr.flush()
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
