"""No process of a campaign outlives it, and nothing prints after the command exits: the fork server, the resource
tracker, the workers and whatever the system under test started are gone when ``layoutfuzz run`` returns or is killed.

Each campaign runs with a tag of its own in its environment, which every process it starts inherits (re-parented or
not), so the campaign's processes are found by scanning ``/proc``."""

from __future__ import annotations

import importlib.util
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYTHONPATH = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
TAG_ENV = "LAYOUTFUZZ_PROCESS_TEST_TAG"
GRACE_S = 3.0  # how long after the command's exit its processes and pipes may take to be gone

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux's /proc")


def tagged(tag: str) -> dict[int, str]:
    """The live processes whose environment carries ``tag``: pid -> command line."""
    needle = f"{TAG_ENV}={tag}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone, or a zombie's
            continue
    return found


@pytest.fixture
def tag() -> Iterator[str]:
    """A campaign's tag; whatever still carries it at the end is killed (a failing test leaves nothing behind)."""
    name = uuid.uuid4().hex
    yield name
    for pid in tagged(name):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Command:
    """``layoutfuzz ARGS`` in a subprocess whose stdout and stderr are read to their end by threads."""

    def __init__(self, args: list[str], cwd: Path, tag: str, env: dict[str, str] | None = None,
                 new_session: bool = False) -> None:
        environment = dict(os.environ, PYTHONPATH=PYTHONPATH, **{TAG_ENV: tag}, **(env or {}))
        self.process = subprocess.Popen([sys.executable, "-m", "layoutfuzz.harness.cli", *args], cwd=cwd,
                                        env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        start_new_session=new_session)
        self.output = {"stdout": b"", "stderr": b""}
        self.readers = [threading.Thread(target=self._read, args=(name,), daemon=True) for name in self.output]
        for reader in self.readers:
            reader.start()

    def _read(self, name: str) -> None:
        stream = getattr(self.process, name)
        for chunk in iter(lambda: stream.read1(65536), b""):
            self.output[name] += chunk

    def text(self, name: str) -> str:
        return self.output[name].decode(errors="replace")

    def finish(self, tag: str, timeout: float = 60) -> tuple[bool, dict[int, str]]:
        """Waits for the command's exit; then whether both pipes reached their end within ``GRACE_S`` and the
        campaign's processes still alive ``GRACE_S`` later."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise
        deadline = time.monotonic() + GRACE_S
        for reader in self.readers:
            reader.join(max(0.0, deadline - time.monotonic()))
        closed = not any(reader.is_alive() for reader in self.readers)
        while tagged(tag) and time.monotonic() < deadline:
            time.sleep(0.05)
        return closed, tagged(tag)


def outcomes(out: Path) -> dict[str, int]:
    """The stored outcomes of a campaign: outcome -> cases."""
    with sqlite3.connect(out / "layoutfuzz.sqlite") as db:
        return dict(db.execute("SELECT outcome, count(*) FROM outcomes GROUP BY outcome").fetchall())


def run_args(target: str, cases: int, *more: str) -> list[str]:
    return ["run", "--target", target, "--cases", str(cases), "--jobs", "2", "-q", "--out", "out", *more]


def test_children_in_sessions_of_their_own_end_with_the_campaign(tmp_path, tag):
    command = Command(run_args("tests.escaping_target:EscapingTarget", 24), tmp_path, tag)
    closed, left = command.finish(tag)
    assert command.process.returncode == 0, command.text("stderr")
    assert outcomes(tmp_path / "out") == {"pass": 24}
    assert left == {}
    assert closed, command.text("stderr")


def test_a_worker_forked_by_the_system_under_test_is_never_the_worker(tmp_path, tag):
    command = Command(run_args("tests.escaping_target:ForkingTarget", 60), tmp_path, tag)
    closed, left = command.finish(tag)
    assert command.process.returncode == 0, command.text("stderr")
    assert outcomes(tmp_path / "out") == {"pass": 60}  # no "error" (a stray child's answer) nor any other outcome
    assert left == {}
    assert closed, command.text("stderr")


def hanging_campaign(tmp_path: Path, tag: str, new_session: bool = False) -> Command:
    """A campaign of two workers, each hung in a case that started two ``sleep 600`` (one in a session of its
    own), once both are hung."""
    marks = tmp_path / "marks"
    marks.mkdir()
    command = Command(run_args("tests.escaping_target:HangingTarget", 8, "--timeout", "120"), tmp_path, tag,
                      env={"ESCAPING_TARGET_MARKS": str(marks)}, new_session=new_session)
    deadline = time.monotonic() + 15
    while len(list(marks.iterdir())) < 2:
        assert time.monotonic() < deadline and command.process.poll() is None, command.text("stderr")
        time.sleep(0.05)
    return command


def test_killing_the_main_process_ends_the_whole_campaign(tmp_path, tag):
    command = hanging_campaign(tmp_path, tag)
    command.process.send_signal(signal.SIGKILL)
    closed, left = command.finish(tag)
    assert left == {}
    assert closed


def test_killing_the_process_group_ends_the_whole_campaign(tmp_path, tag):
    command = hanging_campaign(tmp_path, tag, new_session=True)
    os.killpg(command.process.pid, signal.SIGKILL)
    closed, left = command.finish(tag)
    assert left == {}
    assert closed


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs Triton")
def test_a_triton_campaign_prints_nothing_after_it_returns(tmp_path, tag):
    command = Command(["run", "--targets", "triton.linear_layout", "--cases", "40", "--jobs", "2", "-q", "--out", "out"],
                      tmp_path, tag)
    closed, left = command.finish(tag)
    assert command.process.returncode == 0, command.text("stderr")
    assert left == {}
    assert closed
    assert "nanobind" not in command.text("stderr")
