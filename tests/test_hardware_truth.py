"""The oracles against recorded hardware behaviour (runs in CI, no GPU needed).

``tests/data/hw_tma_h200.json`` holds 400 seeded TMA copies run on an NVIDIA H200 by
``python -m gpu.record tma 400 ...``: per case the params and the SHA-256 of the shared-memory
window the GPU wrote (or the driver's refusal). ``tests/data/hw_wgmma_h200.json`` holds 400 wgmma
operand reads (``python -m gpu.record wgmma 400 ...``): the SHA-256 of the table of addresses the
tensor cores read. The oracles must reproduce every record; a planted oracle error must not.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from gpu.targets import box_from_params
from gpu.tma import expected_window
from gpu.wgmma import probe_layout
from oracles import wgmma
from oracles.tma import SwizzleMode, TiledBox

RECORD = json.loads((Path(__file__).parent / "data" / "hw_tma_h200.json").read_text())
WGMMA = json.loads((Path(__file__).parent / "data" / "hw_wgmma_h200.json").read_text())  # f16
WGMMA_TYPES = json.loads((Path(__file__).parent / "data" / "hw_wgmma_types_h200.json").read_text())  # every type


def _mismatches() -> list[dict]:
    wrong = []
    for case in RECORD["cases"]:
        if "sha256" not in case:
            continue
        window = expected_window(box_from_params(case["params"]), RECORD["window"])
        if hashlib.sha256(window.tobytes()).hexdigest() != case["sha256"]:
            wrong.append(case["params"])
    return wrong


def test_record_covers_every_cuda_mode_and_base_offset():
    copied = [box_from_params(c["params"]) for c in RECORD["cases"] if "sha256" in c]
    assert len(copied) > 200
    assert {b.swizzle for b in copied} == {SwizzleMode.NONE, SwizzleMode.B32, SwizzleMode.B64, SwizzleMode.B128}
    assert {SwizzleMode.B128.base_offset(b.dst) for b in copied if b.swizzle is SwizzleMode.B128} == set(range(8))
    refused = {c["params"]["swizzle"] for c in RECORD["cases"] if "refused" in c}
    assert refused == {"B128_ATOM_32B", "B128_ATOM_32B_FLIP_8B", "B128_ATOM_64B"}  # sm_100 sub-modes on Hopper


def test_oracle_reproduces_every_recorded_window():
    assert _mismatches() == []


def test_planted_error_unpadded_rows_is_caught(monkeypatch):
    monkeypatch.setattr(TiledBox, "row_bytes", property(lambda self: self.inner_bytes))
    assert len(_mismatches()) > 10


def test_planted_error_wrong_64b_swizzle_row_is_caught(monkeypatch):
    original = SwizzleMode.__call__

    def wrong(self, address):  # rows 2 and 3 of the 64B table swapped
        if self is SwizzleMode.B64 and (address >> 8) & 1:
            address ^= 1 << 7
            result = original(self, address)
            return result ^ (1 << 7)
        return original(self, address)

    monkeypatch.setattr(SwizzleMode, "__call__", wrong)
    assert len(_mismatches()) > 10


@pytest.mark.parametrize("mode", [SwizzleMode.B32, SwizzleMode.B128])
def test_planted_error_ignoring_the_base_offset_is_caught(monkeypatch, mode):
    # a model that swizzles the offset from dstMem instead of the absolute address
    original = TiledBox.address
    monkeypatch.setattr(TiledBox, "address", lambda self, index: self.dst + self.swizzle(self.dense_offset(index))
                        if self.swizzle is mode else original(self, index))
    assert len(_mismatches()) > 5


def _wgmma_mismatches() -> list[dict]:
    wrong = []
    for case in WGMMA["cases"] + WGMMA_TYPES["cases"]:
        table = probe_layout(case["params"]).addresses()
        if hashlib.sha256(json.dumps(table).encode()).hexdigest() != case["sha256"]:
            wrong.append(case["params"])
    return wrong


def test_wgmma_record_covers_the_folklore():
    params = [c["params"] for c in WGMMA["cases"]]
    assert {(p["operand"], p["major"], p["swizzle"]) for p in params} >= {
        (o, m, s) for o in "AB" for m in ("k", "mn") for s in ("NONE", "B32", "B64", "B128")
    }
    assert {p["lbo_field"] for p in params if p["lbo_field"] is not None} >= {0, 1, 16}
    unaligned = [p for p in params if p["swizzle"] != "NONE" and p["start"] % wgmma.SwizzleMode[p["swizzle"]].repeat_bytes]
    assert {str(p["base_offset"]) for p in unaligned} >= {"ptx", "zero"}
    assert {c["params"]["dtype"] for c in WGMMA_TYPES["cases"]} == {"f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"}


def test_oracle_reproduces_every_recorded_wgmma_read():
    assert _wgmma_mismatches() == []


def test_planted_error_lbo_and_sbo_swapped_is_caught(monkeypatch):
    original = wgmma.CanonicalLayout.layout

    def swapped(self):
        return original(wgmma.CanonicalLayout(self.major, self.swizzle, self.elem_bits, self.m, self.k, self.sbo, self.lbo))

    monkeypatch.setattr(wgmma.CanonicalLayout, "layout", swapped)
    assert len(_wgmma_mismatches()) > 50


@pytest.mark.parametrize("wrong", ["absolute", "added"])
def test_planted_error_wrong_base_offset_formula_is_caught(monkeypatch, wrong):
    def model(address, mode, base_offset=0):
        bits = mode.swizzle.bits
        row = address >> 7 if wrong == "absolute" else (address >> 7) + base_offset
        return address ^ ((row & ((1 << bits) - 1)) << 4)

    monkeypatch.setattr(wgmma, "swizzle_address", model)
    assert len(_wgmma_mismatches()) > 20
