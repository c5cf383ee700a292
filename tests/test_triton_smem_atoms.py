"""triton.smem_atoms: the smem_atoms case model (cute.smem_atoms' cases) through Triton's NVMMA shared layouts, judged
by the same canonical-layout oracle, and the two systems side by side."""

from __future__ import annotations

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.harness import registry
from layoutfuzz.harness.target import Unsupported, make_case
from layoutfuzz.harness.targets import triton_smem_atoms as target_module
from layoutfuzz.harness.targets.triton_smem_atoms import expected_offsets, nvmma_for
from layoutfuzz.harness.worker import evaluate
from tests.test_cli import ledgered_run


def _case(**params) -> Case:
    return Case("triton.smem_atoms", 0, 0, {"order": [0, 1], **params})


def test_a_128_byte_atom_of_f16_by_hand():
    # PTX 9.7.15.5.1.2 (seed 003): row r of the K-major 128-byte atom at byte 128 r, its 16-byte chunk c at c XOR r.
    # Offset 64 elements is byte 128: row 1, chunk 0, which holds logical chunk 1 (k 8): element (1, 8), flat 72
    p = {"kind": "K_SW128", "element": "f16", "shape": [8, 64], "order": [0, 1]}
    assert expected_offsets(p) == [1, 2, 4, 8, 16, 32, 1 * 64 + 8, 2 * 64 + 16, 4 * 64 + 32]
    # MN-major (transposed): MN contiguous, a 16-byte chunk along MN; the next atom Triton places is along K
    q = {"kind": "MN_SW32", "element": "s32", "shape": [16, 16], "order": [1, 0]}
    assert expected_offsets(q)[:3] == [16, 32, 64]  # mn 1, 2, 4: flat mn * 16
    assert expected_offsets(q)[6] == 8  # offset 64 elements, one whole 8 x 8 atom: k 8 (the next atom along K)


@pytest.mark.parametrize("params, reason", [
    ({"kind": "K_INTER", "element": "f16", "shape": [64, 64]}, "row-major"),
    ({"kind": "K_SW128", "element": "s4", "shape": [64, 256]}, "8-, 16- and 32-bit"),
    ({"kind": "K_SW128", "element": "f64", "shape": [64, 16]}, "8-, 16- and 32-bit"),
    ({"kind": "K_SW64", "element": "f16", "shape": [64, 64, 2], "order": [0, 1, 2]}, "stage"),
    ({"kind": "K_SW64", "element": "f16", "shape": [64, 64], "order": [1, 0]}, "strided dim first"),
    ({"kind": "MN_SW64", "element": "f16", "shape": [64, 64], "order": [0, 1]}, "strided dim first"),
    ({"kind": "K_SW32", "element": "f16", "shape": [24, 32]}, "power-of-two"),
    ({"kind": "K_SW128", "element": "f16", "shape": [64, 32]}, "does not divide"),
])
def test_cases_outside_tritons_layout_are_unsupported_with_the_reason(params, reason):
    with pytest.raises(Unsupported, match=reason):
        nvmma_for({"order": [0, 1], **params})


def test_the_layout_each_kind_maps_to():
    layout = nvmma_for({"kind": "MN_SW64", "element": "bf16", "shape": [64, 16], "order": [1, 0]})
    assert (layout.swizzle_byte_width, layout.element_bitwidth, layout.transposed) == (64, 16, True)
    layout = nvmma_for({"kind": "K_SW32", "element": "e4m3", "shape": [32, 64], "order": [0, 1]})
    assert (layout.swizzle_byte_width, layout.element_bitwidth, layout.transposed) == (32, 8, False)


def test_triton_lays_out_every_supported_case_as_the_oracle_says():
    pytest.importorskip("triton.experimental.gluon", reason="needs Triton with Gluon")
    target = registry.load("triton.smem_atoms")
    outcomes = {}
    for index in range(600):
        case = make_case(target, 0, index)
        outcomes.setdefault(evaluate(target, case)["outcome"], []).append(target.family(case))
    assert set(outcomes) == {"pass", "unsupported"}, {k: v[:5] for k, v in outcomes.items() if k not in ("pass", "unsupported")}
    assert len(outcomes["pass"]) >= 20 and {f[:2] for f in outcomes["pass"]} == {"K_", "MN"}


def test_a_flipped_transpose_is_caught(monkeypatch):
    pytest.importorskip("triton.experimental.gluon", reason="needs Triton with Gluon")
    target = registry.load("triton.smem_atoms")
    right = nvmma_for
    monkeypatch.setattr(target_module, "nvmma_for", lambda p: right(p).__class__(
        right(p).swizzle_byte_width, right(p).element_bitwidth, 2, not right(p).transposed))
    result = evaluate(target, _case(kind="K_SW64", element="f16", shape=[64, 64]))
    assert result["outcome"] == "diverge"


@pytest.mark.slow
def test_both_systems_side_by_side(tmp_path):
    pytest.importorskip("triton.experimental.gluon", reason="needs Triton with Gluon")
    pytest.importorskip("cutlass.cute", reason="needs the CuTe DSL (the [cutedsl] extra; CI installs it)")
    done, rows, unknown = ledgered_run(tmp_path, "cute.smem_atoms,triton.smem_atoms", 450)
    assert done.returncode == 0 and not unknown, done.stdout
    table = (tmp_path / "out" / "side-by-side.md").read_text()
    lines = [[c.strip() for c in line.split("|")[1:-1]] for line in table.splitlines()[2:]]
    ran = {line[1]: (int(line[4]), int(line[6])) for line in lines}  # family -> (cases both ran, outcomes differ)
    assert ran["K_INTER"] == (0, 0)  # Triton has no INTER atom: nothing both ran, nothing to differ on
    assert sum(n for n, _ in ran.values()) >= 20 and not any(differ for _, differ in ran.values())
