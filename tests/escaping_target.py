"""Test-only targets whose system under test leaves processes behind: a child in a session of its own, a hang with
such a child, a fork whose child returns from the case as if it were the worker."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from layoutfuzz.harness.target import Target

MARK_ENV = "ESCAPING_TARGET_MARKS"  # a folder where each hanging case leaves a file once its children are started


def _escape() -> subprocess.Popen:
    """A ``sleep 600`` in a new session: out of the worker's process group."""
    return subprocess.Popen(["sleep", "600"], start_new_session=True)


class _Plain(Target):
    def generate(self, source):
        return {"value": source.integer(0, 1 << 20)}

    def expected(self, case):
        return case.params["value"]

    def observed(self, case):
        return case.params["value"]


class EscapingTarget(_Plain):
    """Each case starts a ``sleep 600`` in a session of its own and passes."""

    name = "test.escaping"

    def observed(self, case):
        _escape()
        return case.params["value"]


class HangingTarget(_Plain):
    """Each case starts a ``sleep 600`` in its own session and one in the worker's group, then hangs."""

    name = "test.hanging"

    def observed(self, case):
        _escape()
        subprocess.Popen(["sleep", "600"])
        marks = os.environ.get(MARK_ENV)
        if marks:
            Path(marks, f"{os.getpid()}-{case.index}").touch()
        time.sleep(600)
        return case.params["value"]


class ForkingTarget(_Plain):
    """Each case forks; parent and child both return from ``observed`` (the child never exits by itself)."""

    name = "test.forking"

    def observed(self, case):
        os.fork()
        return case.params["value"]
