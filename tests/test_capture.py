"""harness.capture.stderr_text: what native code writes to fd 2 (MLIR and LLVM diagnostics) reaches the caller, and an
abort inside the capture still leaves it in a campaign worker's log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WRITE = ("import os\nfrom layoutfuzz.harness.capture import stderr_text\n"
         "with stderr_text() as text:\n    os.write(2, b'LLVM ERROR: boom\\n')\nprint(repr(text))\n")


def _run(script: str, stderr) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=60, cwd=ROOT)


def test_text_written_to_fd_2_is_captured_and_kept_whether_fd_2_is_a_file_or_a_pipe(tmp_path):
    with open(tmp_path / "worker.log", "wb") as log:
        done = _run("import os\nos.write(2, b'before\\n')\n" + WRITE, log)
    assert "LLVM ERROR: boom" in done.stdout and "before" not in done.stdout  # only what the block wrote
    assert (tmp_path / "worker.log").read_text() == "before\nLLVM ERROR: boom\n"  # the log keeps it, once
    done = _run(WRITE, subprocess.PIPE)
    assert "LLVM ERROR: boom" in done.stdout and done.stderr == "LLVM ERROR: boom\n"


def test_an_abort_inside_the_capture_leaves_its_message_in_the_workers_log(tmp_path):
    # a worker's fd 2 is its log file (harness.runner): the crash's signature is read from there
    script = ("import os\nfrom layoutfuzz.harness.capture import stderr_text\n"
              "with stderr_text():\n    os.write(2, b'LLVM ERROR: Invalid basis 2\\n')\n    os.abort()\n")
    with open(tmp_path / "worker.log", "wb") as log:
        done = _run(script, log)
    assert done.returncode != 0
    assert "LLVM ERROR: Invalid basis 2" in (tmp_path / "worker.log").read_text()
