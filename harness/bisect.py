"""Regression ranges: replay one reduced reproducer under Triton releases in order and find where its
root cause starts or stops. A release is *bad* when the reproducer fails there with the same root
cause (the same bucket), *good* when it passes; a release where it fails another way, or cannot run,
stops the search with that said (one problem must not be mistaken for another)."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from layoutfuzz.harness.environments import TritonEnvironment


@dataclass(frozen=True)
class Replay:
    """What a reproducer did under one release."""

    label: str
    triton: str
    outcome: str
    bucket: str
    signature: str

    def state(self, bucket: str) -> str:
        """'bad' (the same root cause), 'good' (passes), or 'other' (fails otherwise, or cannot run)."""
        if self.outcome == "pass":
            return "good"
        return "bad" if self.bucket == bucket else "other"


@dataclass(frozen=True)
class Range:
    """Where a root cause is present among ordered releases (a single change is assumed between the
    probed ones; every release actually replayed is in ``replays``)."""

    bucket: str
    versions: tuple[str, ...]
    replays: tuple[Replay, ...]
    first_bad: str  # '<=3.6.0' where the oldest release is already bad; '' where none is
    first_good: str  # the first good release after the bad ones ('' if still bad in the newest)
    last_good: str  # for a regression: the last good release before it ('' otherwise)
    stopped: str  # why the search stopped early ('' when it finished)
    masked: tuple[str, ...] = ()  # releases at the ends where another failure hides this one (left out of the range)

    def summary(self) -> str:
        masked = f" ({', '.join(self.masked)}: another failure comes first there)" if self.masked else ""
        if self.stopped:
            return f"stopped: {self.stopped}{masked}"
        if not self.first_bad:
            return f"not reproduced under any of {', '.join(v for v in self.versions if v not in self.masked)}{masked}"
        since = f"first bad {self.first_bad}" + (f" (last good {self.last_good})" if self.last_good else "")
        still = [v for v in self.versions if v not in self.masked][-1]
        return f"{since}; " + (f"first good {self.first_good}" if self.first_good else f"still bad in {still}") + masked

    def checked(self) -> str:
        """The releases replayed and what each gave, for the ledger."""
        return ", ".join(f"{r.label} {r.state(self.bucket)}" for r in sorted(self.replays, key=lambda r: self.versions.index(r.label)))


def replay(environment: TritonEnvironment, case_file: Path, timeout: float) -> Replay:
    """Runs ``layoutfuzz reproduce CASE`` under one environment and reads its verdict."""
    with tempfile.TemporaryDirectory(prefix="layoutfuzz-bisect-") as tmp:
        verdict = Path(tmp) / "verdict.json"
        done = subprocess.run(environment.command("reproduce", str(case_file), "--timeout", f"{timeout:g}", "--json", str(verdict)),
                              env=environment.env(), capture_output=True, text=True)
        if not verdict.exists():
            tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            return Replay(environment.label, environment.triton, "error", "", f"reproduce exited {done.returncode}: {tail}")
        data = json.loads(verdict.read_text())
    return Replay(environment.label, environment.triton, data["outcome"], data.get("bucket", ""), data.get("signature", ""))


def bisect(versions: list[str], run: Callable[[str], Replay], bucket: str | None = None) -> Range:
    """The range of ``bucket`` over ``versions``, oldest first (default bucket: the failure under the newest
    release where the reproducer fails, the problem as it is now). Both ends are replayed; an end where
    another failure hides this one is set aside (``masked``) and the next release inward replayed
    instead; then the middle of the changing interval, until it is one step wide."""
    done: dict[str, Replay] = {}

    def at(i: int) -> Replay:
        if versions[i] not in done:
            done[versions[i]] = run(versions[i])
        return done[versions[i]]

    low, high = 0, len(versions) - 1
    ends = [0, len(versions) - 1]  # the releases that frame the range, once masked ends are set aside
    if bucket is None:
        failing = next((r for r in (at(high), at(low)) if r.outcome != "pass"), None)
        bucket = failing.bucket if failing is not None else ""

    def finish(first_bad: str = "", first_good: str = "", last_good: str = "", stopped: str = "") -> Range:
        masked = tuple(versions[:ends[0]] + versions[ends[1] + 1:])
        return Range(bucket, tuple(versions), tuple(done.values()), first_bad, first_good, last_good, stopped, masked)

    if not bucket:
        return finish()
    while low < high and at(low).state(bucket) == "other":
        low += 1
    while high > low and at(high).state(bucket) == "other":
        high -= 1
    ends[:] = [low, high]
    if at(low).state(bucket) == "other":
        r = at(low)
        return finish(stopped=f"under {r.label} it gives {r.outcome} ({r.signature or 'no signature'}), another root cause")
    start = at(low).state(bucket)
    oldest = f"<={versions[low]}" if low == 0 else versions[low]
    if start == at(high).state(bucket):
        return finish(first_bad=oldest) if start == "bad" else finish()
    while high - low > 1:  # invariant: versions[low] is in the start state, versions[high] is not
        mid = (low + high) // 2
        state = at(mid).state(bucket)
        if state == "other":
            r = at(mid)
            return finish(stopped=f"under {r.label} it gives {r.outcome} ({r.signature or 'no signature'}), another root cause")
        if state == start:
            low = mid
        else:
            high = mid
    if start == "bad":  # fixed at versions[high]
        return finish(first_bad=oldest, first_good=versions[high])
    return finish(first_bad=versions[high], last_good=versions[low])
