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

from harness.environments import TritonEnvironment


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

    def summary(self) -> str:
        if self.stopped:
            return f"stopped: {self.stopped}"
        if not self.first_bad:
            return f"not reproduced under any of {', '.join(self.versions)}"
        since = f"first bad {self.first_bad}" + (f" (last good {self.last_good})" if self.last_good else "")
        return f"{since}; " + (f"first good {self.first_good}" if self.first_good else f"still bad in {self.versions[-1]}")

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
    """The range of ``bucket`` (default: the oldest release's failure) over ``versions``, oldest first:
    both ends are replayed, then the middle of the changing interval until it is one step wide."""
    done: dict[str, Replay] = {}

    def at(i: int) -> Replay:
        if versions[i] not in done:
            done[versions[i]] = run(versions[i])
        return done[versions[i]]

    def finish(first_bad: str = "", first_good: str = "", last_good: str = "", stopped: str = "") -> Range:
        return Range(bucket or "", tuple(versions), tuple(done.values()), first_bad, first_good, last_good, stopped)

    oldest, newest = at(0), at(len(versions) - 1)
    if bucket is None:
        failing = next((r for r in (oldest, newest) if r.outcome != "pass"), None)
        if failing is None:
            return finish()
        bucket = failing.bucket
    for end in (oldest, newest):
        if end.state(bucket) == "other":
            return finish(stopped=f"under {end.label} it gives {end.outcome} ({end.signature or 'no signature'}), another root cause")
    low, high = 0, len(versions) - 1
    start = oldest.state(bucket)
    if start == newest.state(bucket):
        return finish(first_bad=f"<={versions[0]}") if start == "bad" else finish()
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
        return finish(first_bad=f"<={versions[0]}", first_good=versions[high])
    return finish(first_bad=versions[high], last_good=versions[low])
