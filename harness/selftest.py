"""Mutation testing of the harness itself: faults planted in copies of the oracles, each of which
the recorded ground truth (``harness.truth``: what an H200 did, the seeds' tables) must expose.
``layoutfuzz selftest`` prints how many are caught; CI requires at least 95%."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from unittest import mock

from layoutfuzz.harness import truth
from layoutfuzz.oracles import wgmma
from layoutfuzz.oracles.tma import SwizzleMode, TiledBox

REQUIRED_SCORE = 0.95
MAX_BUCKETS = 2  # a planted fault may land in at most this many root causes


# ---- evidence: counts of records the (possibly mutated) oracles get wrong ------------------------


def tma_records(first_only: bool = False) -> int:
    """Recorded TMA windows (H200) the oracle does not reproduce."""
    from layoutfuzz.oracles.tma import box_from_params
    from layoutfuzz.oracles.tma_windows import expected_window

    wrong = 0
    for case in truth.HW_TMA["cases"]:
        if "sha256" in case:
            window = expected_window(box_from_params(case["params"]), truth.HW_TMA["window"])
            wrong += hashlib.sha256(window.tobytes()).hexdigest() != case["sha256"]
            if wrong and first_only:
                break
    return wrong


def wgmma_records(first_only: bool = False) -> int:
    """Recorded wgmma operand reads (H200, every type) the oracle does not reproduce."""
    from layoutfuzz.oracles.wgmma import probe_layout

    wrong = 0
    for case in truth.HW_WGMMA["cases"] + truth.HW_WGMMA_TYPES["cases"]:
        table = probe_layout(case["params"]).addresses()
        wrong += hashlib.sha256(json.dumps(table).encode()).hexdigest() != case["sha256"]
        if wrong and first_only:
            break
    return wrong


def convert_records(first_only: bool = False) -> int:
    """Recorded Gluon conversions (H100) where the oracle names another holder for some element."""
    from layoutfuzz.oracles import algorithms
    from layoutfuzz.oracles.linear_layout import LinearLayout

    wrong = 0
    for case in truth.HW_CONVERT["cases"]:
        p = case["params"]
        table = [algorithms.holders(LinearLayout.from_dict(p[side]), p["shape"]) for side in ("a", "b")]
        wrong += hashlib.sha256(json.dumps(table).encode()).hexdigest() != case["sha256"]
        if wrong and first_only:
            break
    return wrong


def seed_tables(first_only: bool = False) -> int:
    """Rows of 5.5.7's destination tables (seed 004) the oracle does not reproduce, over two
    periods ("... Pattern repeats ...")."""
    wrong = 0
    for name, rows in truth.SEED004_TABLES["tables"].items():
        wrong += sum(a != b for a, b in zip(SwizzleMode[name].cell_table(2 * len(rows)), rows + rows))
    return wrong


EVIDENCE: dict[str, Callable[[bool], int]] = {
    "hw.tma": tma_records, "hw.wgmma": wgmma_records, "hw.convert": convert_records, "seed004": seed_tables,
}


# ---- mutants ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    """A fault planted in a copy of an oracle (``plant`` patches it in for the duration), and the
    evidence that should expose it."""

    name: str
    fault: str
    evidence: str
    plant: Callable[[], AbstractContextManager]


def _swizzle_call(change: Callable[[SwizzleMode, int, Callable[[SwizzleMode, int], int]], int]) -> AbstractContextManager:
    original = SwizzleMode.__call__
    return mock.patch.object(SwizzleMode, "__call__", lambda self, address: change(self, address, original))


def _row_swap_64b(self: SwizzleMode, address: int, original) -> int:
    if self is SwizzleMode.B64 and (address >> 8) & 1:  # rows 2 and 3 of the 64B table swapped
        return original(self, address ^ (1 << 7)) ^ (1 << 7)
    return original(self, address)


def _phase_plus_one(self: SwizzleMode, address: int, original) -> int:
    return original(self, address + 128) - 128 if self.spec.span else original(self, address)


def _b96_as_b64(self: SwizzleMode, address: int, original) -> int:
    return original(SwizzleMode.B64 if self is SwizzleMode.B96 else self, address)


def _wgmma_rows(rows: Callable[[int, int], int]) -> AbstractContextManager:
    def model(address: int, mode, base_offset: int = 0) -> int:
        bits = mode.swizzle.bits
        return address ^ ((rows(address >> 7, base_offset) & ((1 << bits) - 1)) << 4)

    return mock.patch.object(wgmma, "swizzle_address", model)


def _lbo_sbo_swapped() -> AbstractContextManager:
    original = wgmma.CanonicalLayout.layout

    def swapped(self):
        return original(wgmma.CanonicalLayout(self.major, self.swizzle, self.elem_bits, self.m, self.k, self.sbo, self.lbo))

    return mock.patch.object(wgmma.CanonicalLayout, "layout", swapped)


@contextmanager
def _lbo_field_honoured() -> Iterator[None]:
    """The descriptor's LBO field (in 16-byte units) used for swizzled K-major operands."""
    import dataclasses

    from layoutfuzz.oracles.cute import Layout

    layout, read = wgmma.CanonicalLayout.layout, wgmma.probe_layout

    def with_lbo(self):
        if self.major is wgmma.Major.K and self.swizzle is not wgmma.SwizzleMode.NONE:
            T, W, sbo = self.T, self.swizzle.width, self.sbo * 8 // self.elem_bits
            return Layout(((8, self.m), (T, 2 * self.k)), ((W * T, sbo), (1, max(1, self.lbo * 8 // self.elem_bits))))
        return layout(self)

    def field_as_lbo(p):
        canonical = read(p)
        return canonical if p.get("lbo_field") is None else dataclasses.replace(canonical, lbo=16 * int(p["lbo_field"]))

    with mock.patch.object(wgmma.CanonicalLayout, "layout", with_lbo), mock.patch.object(wgmma, "probe_layout", field_as_lbo):
        yield


def _broadcast_bits(layout) -> int:
    """The %tid.x bits (lane, then warp) whose bases are zero: the copies of broadcast data."""
    bases = dict(layout.in_dims)
    lanes = sum(1 << j for j, b in enumerate(bases.get("lane", ())) if not any(b))
    warps = sum(1 << j for j, b in enumerate(bases.get("warp", ())) if not any(b))
    return lanes | (warps << 5)


def _holders(change: Callable) -> AbstractContextManager:
    from layoutfuzz.oracles import algorithms

    original = algorithms.holders
    return mock.patch.object(algorithms, "holders", lambda layout, shape: change(layout, shape, original))


def _dropped_broadcast(layout, shape, original):
    from layoutfuzz.oracles.linear_layout import LinearLayout

    kept = tuple((n, tuple(b for b in bs if any(b)) if n in ("lane", "warp") else bs) for n, bs in layout.in_dims)
    return original(LinearLayout(kept, layout.out_dims), shape)


def _slack_ones(layout, shape, original):
    return [tid | _broadcast_bits(layout) for tid in original(layout, shape)]


MUTANTS: tuple[Mutant, ...] = (
    Mutant("tma.unpadded-rows", "inner rows narrower than the swizzle span packed densely", "hw.tma",
           lambda: mock.patch.object(TiledBox, "row_bytes", property(lambda self: self.inner_bytes))),
    Mutant("tma.64b-row-swap", "rows 2 and 3 of the 64B table swapped", "hw.tma", lambda: _swizzle_call(_row_swap_64b)),
    Mutant("tma.base-offset-ignored", "swizzling the offset from dstMem, not the absolute address", "hw.tma",
           lambda: mock.patch.object(TiledBox, "address", lambda self, index: self.dst + self.swizzle(self.dense_offset(index)))),
    Mutant("tma.phase-off-by-one", "swizzle phase one 128-byte row late", "hw.tma", lambda: _swizzle_call(_phase_plus_one)),
    Mutant("tma.element-strides-ignored", "every element copied whatever the element stride", "hw.tma",
           lambda: mock.patch.object(TiledBox, "loaded_dims", property(lambda self: tuple(self.box_dims)))),
    Mutant("tma.96b-as-64b", "the 96B mode given the 64B table", "seed004", lambda: _swizzle_call(_b96_as_b64)),
    Mutant("wgmma.lbo-sbo-swapped", "LBO and SBO swapped", "hw.wgmma", _lbo_sbo_swapped),
    Mutant("wgmma.base-offset-added", "base offset added to the row bits (PTX read literally)", "hw.wgmma",
           lambda: _wgmma_rows(lambda row, base: row + base)),
    Mutant("wgmma.base-offset-ignored", "base offset ignored (absolute row bits)", "hw.wgmma",
           lambda: _wgmma_rows(lambda row, base: row)),
    Mutant("wgmma.phase-off-by-one", "swizzle phase one row late", "hw.wgmma", lambda: _wgmma_rows(lambda row, base: row + 1 - base)),
    Mutant("convert.dropped-broadcast-column", "broadcast (zero) lane and warp columns dropped, renumbering threads",
           "hw.convert", lambda: _holders(_dropped_broadcast)),
    Mutant("convert.slack-ones", "the right inverse's slack variables set to one: the last copy, not the first",
           "hw.convert", lambda: _holders(_slack_ones)),
    Mutant("wgmma.lbo-not-ignored", "the LBO field used for swizzled K-major operands, where PTX assumes 1", "hw.wgmma",
           _lbo_field_honoured),
)


@dataclass(frozen=True)
class Verdict:
    mutant: Mutant
    caught: bool
    how: str  # "mismatch", "raised ...", or "missed"
    seconds: float


def baseline() -> dict[str, int]:
    """Mismatches of the unmutated oracles per evidence: all must be 0 for the score to mean anything."""
    return {name: check(False) for name, check in EVIDENCE.items()}


def run(mutants: tuple[Mutant, ...] | None = None) -> Iterator[Verdict]:
    """Each mutant planted in turn, and whether its evidence exposed it."""
    for mutant in MUTANTS if mutants is None else mutants:
        start = time.perf_counter()
        with mutant.plant():
            try:
                how = "mismatch" if EVIDENCE[mutant.evidence](True) > 0 else "missed"
            except Exception as exc:  # the mutated oracle fails loudly on recorded cases: caught too
                how = f"raised {type(exc).__name__}"
        yield Verdict(mutant, how != "missed", how, time.perf_counter() - start)


# ---- spread: how many buckets each planted fault lands in, and how small its reduced case gets ------

# evidence -> the target whose comparison and shrinks apply, and its recorded cases' params
EVIDENCE_TARGETS: dict[str, tuple[str, Callable[[], list[dict]]]] = {
    "hw.tma": ("tma.swizzle", lambda: [c["params"] for c in truth.HW_TMA["cases"] if "sha256" in c]),
    "hw.wgmma": ("wgmma.descriptor", lambda: [c["params"] for c in truth.HW_WGMMA["cases"] + truth.HW_WGMMA_TYPES["cases"]]),
    "hw.convert": ("triton.convert_layout", lambda: [c["params"] for c in truth.HW_CONVERT["cases"]]),
}


@dataclass(frozen=True)
class Spread:
    """A planted fault seen as a campaign would see it: its divergences, their buckets (root causes),
    and the size of its reduced case (characters of canonical JSON params) against the original's."""

    mutant: Mutant
    divergences: int
    buckets: tuple[str, ...]  # the root-cause signatures
    original_chars: int | None
    reduced_chars: int | None


class _Inline:
    """The reducer's runner, in this process: the mutated oracle is "expected", the unmutated one
    (which reproduces every recorded hardware observation, ``baseline()``) stands in for the hardware."""

    jobs = 1

    def __init__(self, target, mutant: Mutant) -> None:
        self.target, self.mutant, self.done = target, mutant, []

    @property
    def in_flight(self) -> int:
        return len(self.done)

    def submit(self, spec, case, family) -> None:
        self.done.append(divergence(self.target, self.mutant, case, family))

    def results(self, wait_s=None):
        out, self.done = self.done, []
        return out


def divergence(target, mutant: Mutant, case, family: str = ""):
    """The outcome of ``case`` with the fault planted in the oracle, against the hardware's answer."""
    from layoutfuzz.reports.outcome import Outcome, Result

    observed = target.expected(case)
    try:
        with mutant.plant():
            expected = target.expected(case)
    except Exception as exc:  # the mutated oracle fails loudly: an error of the harness
        return Result(case, family, Outcome.ERROR, f"exception in the oracle:\n{type(exc).__name__}: {exc}")
    verdict = target.compare(case, expected, observed)
    return Result(case, family, Outcome.PASS if verdict.ok else Outcome.DIVERGE, signature=verdict.signature)


def spread(mutant: Mutant, max_tries: int = 60, records: int = 150) -> Spread:
    """The first ``records`` recorded cases of the mutant's evidence run as a campaign would: bucketed
    by root cause, the first failing one reduced. Table evidence (seed 004) has no cases: None."""
    from layoutfuzz.generators.case import Case
    from layoutfuzz.harness import registry
    from layoutfuzz.harness.reduce import reduce_case
    from layoutfuzz.reports.signatures import root_cause

    if mutant.evidence not in EVIDENCE_TARGETS:
        return Spread(mutant, 0, (), None, None)
    name, params = EVIDENCE_TARGETS[mutant.evidence]
    target = registry.load(name)
    signatures: dict[str, int] = {}
    first = None
    for index, p in enumerate(params()[:records]):
        case = Case(target.name, 0, index, p)
        result = divergence(target, mutant, case)
        if result.outcome.value != "pass":
            signatures[root_cause(result)] = signatures.get(root_cause(result), 0) + 1
            first = first or case
    if first is None:
        return Spread(mutant, 0, (), None, None)
    done = reduce_case(name, target, first, _Inline(target, mutant), max_tries)
    reduced = len(done.reduced.params_json) if done else None
    return Spread(mutant, sum(signatures.values()), tuple(sorted(signatures)), len(first.params_json), reduced)
