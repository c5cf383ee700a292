"""The oracles against recorded hardware behaviour (runs in CI, no GPU needed).

``harness/truth/hw_tma_h200.json`` holds 400 seeded TMA copies run on an NVIDIA H200 by
``python -m layoutfuzz.gpu.record tma 400 ...``: per case the params and the SHA-256 of the shared-memory
window the GPU wrote (or the driver's refusal). ``harness/truth/hw_wgmma_h200.json`` holds 400 wgmma
operand reads (``python -m layoutfuzz.gpu.record wgmma 400 ...``): the SHA-256 of the table of addresses the
tensor cores read. The oracles must reproduce every record. Planted oracle errors: ``harness/selftest.py``
(``layoutfuzz selftest``, tests/test_selftest.py).
"""

from __future__ import annotations

import pytest

from layoutfuzz.harness.selftest import tma_records, wgmma_records
from layoutfuzz.harness.truth import HW_TMA as RECORD
from layoutfuzz.harness.truth import HW_WGMMA as WGMMA  # f16
from layoutfuzz.harness.truth import HW_WGMMA_TYPES as WGMMA_TYPES  # every type
from layoutfuzz.oracles import wgmma
from layoutfuzz.oracles.tma import SwizzleMode, box_from_params


def test_record_covers_every_cuda_mode_and_base_offset():
    copied = [box_from_params(c["params"]) for c in RECORD["cases"] if "sha256" in c]
    assert len(copied) > 200
    assert {b.swizzle for b in copied} == {SwizzleMode.NONE, SwizzleMode.B32, SwizzleMode.B64, SwizzleMode.B128}
    assert {SwizzleMode.B128.base_offset(b.dst) for b in copied if b.swizzle is SwizzleMode.B128} == set(range(8))
    refused = {c["params"]["swizzle"] for c in RECORD["cases"] if "refused" in c}
    assert refused == {"B128_ATOM_32B", "B128_ATOM_32B_FLIP_8B", "B128_ATOM_64B"}  # sm_100 sub-modes on Hopper


def test_oracle_reproduces_every_recorded_window():
    assert tma_records() == 0


def test_wgmma_record_covers_the_folklore():
    params = [c["params"] for c in WGMMA["cases"]]
    assert {(p["operand"], p["major"], p["swizzle"]) for p in params} >= {
        (o, m, s) for o in "AB" for m in ("k", "mn") for s in ("NONE", "B32", "B64", "B128")
    }
    assert {p["lbo_field"] for p in params if p["lbo_field"] is not None} >= {0, 1, 16}
    unaligned = [p for p in params if p["swizzle"] != "NONE" and p["start"] % wgmma.SwizzleMode[p["swizzle"]].repeat_bytes]
    assert {str(p["base_offset"]) for p in unaligned} >= {"ptx", "zero"}
    assert {c["params"]["dtype"] for c in WGMMA_TYPES["cases"]} == {"f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"}


@pytest.mark.slow
def test_oracle_reproduces_every_recorded_wgmma_read():
    assert wgmma_records() == 0


def test_convert_record_covers_broadcasting_and_every_plan():
    from layoutfuzz.generators.case import Case
    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout
    from layoutfuzz.harness.truth import HW_CONVERT

    cases = HW_CONVERT["cases"]
    target = TritonConvertLayout()
    plans = {target.family(Case(target.name, 0, i, c["params"])).split(":")[0] for i, c in enumerate(cases)}
    assert len(cases) == 200 and plans >= {"register", "shuffle", "shared"}
    broadcast = [c for c in cases if any(not any(b) for n, bs in c["params"]["a"]["bases"] if n in ("lane", "warp") for b in bs)]
    assert len(broadcast) > 100


def test_oracle_names_every_recorded_holder():
    from layoutfuzz.harness.selftest import convert_records

    assert convert_records() == 0
