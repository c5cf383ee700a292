"""Test-only targets for interrupted and resumed campaigns: five of them, each case a short sleep (the second's four times as long), and every fifth
case of each a divergence (so reports are written too)."""

from __future__ import annotations

import os
import time

from layoutfuzz.harness.target import Target


class _Sleepy(Target):
    pace = 1  # how many times RESUME_SLEEP_S a case sleeps: targets of one campaign finish at different rates

    def generate(self, source):
        return {"value": source.integer(0, 1 << 20)}

    def expected(self, case):
        return {"value": case.params["value"]}

    def observed(self, case):
        time.sleep(self.pace * float(os.environ.get("RESUME_SLEEP_S", "0.01")))
        return {"value": case.params["value"] ^ (case.index % 5 == 4)}


class First(_Sleepy):
    name = "test.resume1"


class Second(_Sleepy):
    name = "test.resume2"
    pace = 4


class Third(_Sleepy):
    name = "test.resume3"


class Fourth(_Sleepy):
    name = "test.resume4"


class Fifth(_Sleepy):
    name = "test.resume5"


SPECS = [f"tests.resume_targets:{name}" for name in ("First", "Second", "Third", "Fourth", "Fifth")]


class Placeholder(Target):
    """A plug-in whose wrapper was never filled in: every case raises in the harness's own code."""

    name = "test.placeholder"

    def generate(self, source):
        return {"value": source.integer(0, 9)}

    def expected(self, case):
        return {"value": case.params["value"]}

    def observed(self, case):
        import mylib  # noqa: F401 - the placeholder of a newcomer's first target

        return {}
