"""A test-only target whose system under test aborts, segfaults, hangs or lies on chosen cases.

``index % 6``: 0 pass, 1 abort (SIGABRT), 2 segfault (SIGSEGV), 3 hang, 4 diverge, 5 pass
after a short sleep (for interrupting campaigns mid-way).
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

from layoutfuzz.harness.target import Target, Unsupported

BEHAVIOURS = ("pass", "abort", "segfault", "hang", "diverge", "slow")


class CrashyTarget(Target):
    name = "test.crashy"
    description = "test-only: aborts, segfaults, hangs and diverges on chosen cases"

    def generate(self, source):
        return {"value": source.integer(0, 1 << 20)}

    def family(self, case):
        return BEHAVIOURS[case.index % len(BEHAVIOURS)]

    def expected(self, case):
        return {"value": case.params["value"]}

    def observed(self, case):
        behaviour = self.family(case)
        if behaviour == "abort":
            print("crashy: about to abort", file=sys.stderr, flush=True)
            os.abort()
        if behaviour == "segfault":
            ctypes.string_at(0)
        if behaviour == "hang":
            while True:
                time.sleep(1)
        if behaviour == "diverge":
            return {"value": case.params["value"] ^ 1}
        if behaviour == "slow":
            time.sleep(float(os.environ.get("CRASHY_SLOW_S", "0.05")))
        return {"value": case.params["value"]}


class UnavailableTarget(Target):
    name = "test.unavailable"

    def availability(self):
        from layoutfuzz.harness.target import Availability

        return Availability(False, "needs hardware this machine does not have")

    def generate(self, source):
        return {}


class SlowTarget(Target):
    """Every case passes after a short sleep: campaigns long enough to kill mid-way."""

    name = "test.slow"

    def generate(self, source):
        return {"value": source.integer(0, 1 << 20)}

    def expected(self, case):
        return case.params["value"]

    def observed(self, case):
        time.sleep(0.05)
        return case.params["value"]


MARKUP = "<script>alert('layoutfuzz')</script><img src=x onerror=alert(1)>"


class MarkupTarget(Target):
    """Everything a system under test says is markup: family names, crash output, values."""

    name = "test.markup"

    def generate(self, source):
        return {"value": source.integer(0, 3)}

    def family(self, case):
        return f"{MARKUP}{case.params['value'] % 2}"

    def expected(self, case):
        return {"value": MARKUP}

    def observed(self, case):
        if case.index % 2:
            print(MARKUP, file=sys.stderr, flush=True)
            os.abort()
        return {"value": MARKUP + "!"}


class TwinTarget(CrashyTarget):
    """Another system of CrashyTarget's case model: the same cases (by seed and index), always right, but it has no
    "hang" cases (unsupported)."""

    name = "test.twin"
    case_model = "test.crashy"

    def observed(self, case):
        if self.family(case) == "hang":
            raise Unsupported("the twin has no such case")
        return {"value": case.params["value"]}


WARMED_IN: int | None = None  # the pid of the process that ran WarmTarget.warm_up in this one's lineage


class WarmTarget(Target):
    """Passes a case only where its warm_up ran in the fork server the worker was forked from (not in the worker)."""

    name = "test.warm"

    def warm_up(self):
        global WARMED_IN
        WARMED_IN = os.getpid()

    def generate(self, source):
        return {}

    def expected(self, case):
        return {"warmed in the fork server": True}

    def observed(self, case):
        return {"warmed in the fork server": WARMED_IN is not None and WARMED_IN != os.getpid()}


class LlvmFatalTarget(Target):
    """Every case prints an LLVM fatal error through a ``stderr_text`` capture (as the Triton targets compile), then a
    dump longer than the log tail a crash keeps, then aborts: the crash's signature must still name the error."""

    name = "test.llvm_fatal"

    def generate(self, source):
        return {}

    def expected(self, case):
        return {}

    def observed(self, case):
        from layoutfuzz.harness.capture import stderr_text

        with stderr_text():
            os.write(2, b"LLVM ERROR: Invalid basis 2 for in-dim 'lane' and out-dim 'dim1'.\n")
            os.write(2, b"".join(b"  frame %d of a long dump\n" % i for i in range(60)))
            os.abort()


class NamedHangTarget(CrashyTarget):
    """CrashyTarget whose timeouts name what the case was doing: its family."""

    name = "test.named_hang"

    def timeout_cause(self, case):
        return f"spinning in {self.family(case)}"
