"""Regression ranges: replay one reduced reproducer under Triton releases in order and find where its
root cause starts or stops. A release is *bad* when the reproducer fails there with the same root
cause (the same bucket), *good* when it passes; a release where it fails another way stops the search
with that said (one problem must not be mistaken for another). A *refused* replay (the case could not
run there: no verdict, or its target is unsupported) is neither good nor bad: it says nothing."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from layoutfuzz.harness.environments import TritonEnvironment
from layoutfuzz.reports import schema

REFUSED = "refused"  # the outcome of a replay that gave no verdict (``reproduce`` refused or failed to start)


@dataclass(frozen=True)
class Replay:
    """What a reproducer did under one release."""

    label: str
    triton: str
    outcome: str
    bucket: str
    signature: str

    def state(self, bucket: str) -> str:
        """'bad' (the same root cause), 'good' (passes), 'refused' (the case did not run: no evidence either way)
        or 'other' (fails otherwise)."""
        if self.outcome == "pass":
            return "good"
        if self.refused:
            return "refused"
        return "bad" if bucket and self.bucket == bucket else "other"

    @property
    def refused(self) -> bool:
        return self.outcome in (REFUSED, "unsupported")

    def why(self) -> str:
        """What the replay gave, in words, for a summary that stops on it."""
        if self.refused:
            return f"under {self.label} the replay was refused ({self.signature or self.outcome})"
        return f"under {self.label} it gives {self.outcome} ({self.signature or 'no signature'}), another root cause"


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

    @property
    def refused(self) -> tuple[str, ...]:
        """The releases whose replay was refused (no evidence there)."""
        return tuple(v for v in self.versions if any(r.label == v and r.refused for r in self.replays))

    def _set_aside(self) -> str:
        other = [v for v in self.masked if v not in self.refused]
        parts = [f"{', '.join(other)}: another failure comes first there"] if other else []
        parts += [f"{', '.join(self.refused)}: replay refused"] if self.refused else []
        return f" ({'; '.join(parts)})" if parts else ""

    def summary(self) -> str:
        masked = self._set_aside()
        if self.stopped:
            return f"stopped: {self.stopped}{masked}"
        if not self.first_bad:
            tried = [v for v in self.versions if v not in self.masked and v not in self.refused]
            return f"not reproduced under any of {', '.join(tried)}{masked}"
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
            return Replay(environment.label, environment.triton, REFUSED, "", f"reproduce exited {done.returncode}: {tail}")
        data = json.loads(verdict.read_text())
    return Replay(environment.label, environment.triton, data["outcome"], data.get("bucket", ""), data.get("signature", ""))


def kernels_refusal(case_file: Path) -> str:
    """Why ``bisect --kernels`` cannot replay this case ('' where it can): a folder of prebuilt kernels stands in
    for a release only for a target that runs them; any other would run this interpreter's own Triton under
    every release's label."""
    from layoutfuzz.harness import trust
    from layoutfuzz.harness.campaign import load_target

    case, report = schema.read_case_file(case_file)
    try:
        target = load_target(trust.trusted_spec((report or {}).get("target_spec") or case.target, str(case_file), case.target))
    except trust.UntrustedTarget as exc:
        return str(exc)
    if getattr(target, "prebuilt", False):
        return ""
    return (f"{target.name} has no prebuilt kernels: --kernels would replay this interpreter's Triton under every release's "
            f"label; bisect it without --kernels (each release in its own environment: --triton 3.6.0..3.9.0)")


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
        failing = next((r for r in (at(high), at(low)) if r.outcome != "pass" and not r.refused), None)
        bucket = failing.bucket if failing is not None else ""

    def finish(first_bad: str = "", first_good: str = "", last_good: str = "", stopped: str = "") -> Range:
        masked = tuple(versions[:ends[0]] + versions[ends[1] + 1:])
        return Range(bucket, tuple(versions), tuple(done.values()), first_bad, first_good, last_good, stopped, masked)

    if not bucket:
        return finish(stopped=_all_refused(done.values()))
    while low < high and at(low).state(bucket) in ("other", "refused"):
        low += 1
    while high > low and at(high).state(bucket) in ("other", "refused"):
        high -= 1
    ends[:] = [low, high]
    if at(low).state(bucket) in ("other", "refused"):
        return finish(stopped=_all_refused(done.values()) or at(low).why())
    start = at(low).state(bucket)
    oldest = f"<={versions[low]}" if low == 0 else versions[low]
    if start == at(high).state(bucket):
        return finish(first_bad=oldest) if start == "bad" else finish()
    while high - low > 1:  # invariant: versions[low] is in the start state, versions[high] is not
        mid = (low + high) // 2
        state = at(mid).state(bucket)
        if state in ("other", "refused"):
            return finish(stopped=at(mid).why())
        if state == start:
            low = mid
        else:
            high = mid
    if start == "bad":  # fixed at versions[high]
        return finish(first_bad=oldest, first_good=versions[high])
    return finish(first_bad=versions[high], last_good=versions[low])


def _all_refused(replays: Iterable[Replay]) -> str:
    """Why the search stops where every replay was refused ('' where one ran): no release gave evidence."""
    replays = list(replays)
    if not replays or not all(r.refused for r in replays):
        return ""
    return "every replay was refused (" + "; ".join(f"{r.label}: {r.signature or r.outcome}" for r in replays) + ")"
