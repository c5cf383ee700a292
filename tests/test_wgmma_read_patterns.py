"""``triton.wgmma`` names how an unswizzled operand was misread: the two read patterns on literal buffers, then the
products an H100 gave under each Triton release (tests/data/wgmma-unswizzled-reads-h100.json) signed by the pattern
that reproduces them exactly."""

import json
from pathlib import Path

import numpy as np
import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.targets.triton_wgmma import TritonWgmma, read_as_transposed_core_matrices, read_with_32_byte_swizzle

RECORDED = json.loads((Path(__file__).parent / "data" / "wgmma-unswizzled-reads-h100.json").read_text())["observed"]
BUFFER = np.arange(128).reshape(8, 16)  # 8 rows of 16 16-bit elements: element i at byte 2 i


def test_32_byte_swizzle_swaps_the_halves_of_rows_4_to_7():
    seen = read_with_32_byte_swizzle(BUFFER)
    assert seen[:4].tolist() == BUFFER[:4].tolist()
    assert seen[4].tolist() == [72, 73, 74, 75, 76, 77, 78, 79, 64, 65, 66, 67, 68, 69, 70, 71]
    assert seen[7].tolist() == [120, 121, 122, 123, 124, 125, 126, 127, 112, 113, 114, 115, 116, 117, 118, 119]


def test_transposed_core_matrices_take_each_128_bytes_column_for_row():
    seen = read_as_transposed_core_matrices(BUFFER)
    assert seen[0].tolist() == [0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120]
    assert seen[7].tolist() == [7, 15, 23, 31, 39, 47, 55, 63, 71, 79, 87, 95, 103, 111, 119, 127]


def _case(record):
    return Case(**record["case"])


@pytest.mark.parametrize("record", RECORDED, ids=lambda r: f"{r['triton']}-case{r['case']['index']}")
def test_the_h100_products_are_signed_by_their_read_pattern(record):
    case = _case(record)
    target = TritonWgmma()
    verdict = target.compare_results(case, target.expected(case), record["d"])
    read = "as transposed core matrices" if record["triton"] in ("3.6.0", "3.7.1") else "with a 32-byte swizzle"
    assert not verdict.ok and verdict.signature == f"wrong-products:unswizzled operand read {read}"


def test_products_no_pattern_explains_keep_the_generic_signature():
    record = RECORDED[2]  # 3.8.0, B unswizzled: the swizzled read with one product changed besides
    case, d = _case(record), list(record["d"])
    d[5] += 1
    verdict = TritonWgmma().compare_results(case, TritonWgmma().expected(case), d)
    assert verdict.signature == "wrong-products:some:unswizzled operand"


def test_right_products_pass():
    case = _case(RECORDED[0])
    target = TritonWgmma()
    assert target.compare_results(case, target.expected(case), target.expected(case)).ok


def _verdict(script: str, d: list[int], monkeypatch) -> tuple[int, str]:
    """The script's parent run with a child that answers ``d`` (what the H100 gave): its exit code and last line."""
    import subprocess
    import types

    def child(argv, **_):
        np.savez(Path(argv[2]) / "outputs.npz", d=np.asarray(d, np.float64))
        return types.SimpleNamespace(stdout='ANSWER {"done": true}\n', stderr="", returncode=0)

    space: dict = {"__name__": "repro"}
    exec(compile(script, "repro.py", "exec"), space)
    monkeypatch.setattr(subprocess, "run", child)
    printed: list[str] = []
    space["print"] = lambda *words: printed.append(" ".join(map(str, words)))
    with pytest.raises(SystemExit) as done:
        space["main"]()
    return done.value.code, printed[-1]


@pytest.mark.parametrize("release, read, code", [("3.6.0", "as transposed core matrices", 1),
                                                  ("3.8.0", "as transposed core matrices", 0),
                                                  ("3.8.0", "with a 32-byte swizzle", 1),
                                                  ("3.6.0", "with a 32-byte swizzle", 0)])
def test_a_problem_script_exits_1_only_while_its_read_pattern_shows(release, read, code, monkeypatch):
    record = next(r for r in RECORDED if r["triton"] == release and r["case"]["index"] == 59)
    script = TritonWgmma().problem_script(_case(record), f"wrong-products:unswizzled operand read {read}")
    assert "layoutfuzz" not in script.split('"""', 2)[2]
    exit_code, observed = _verdict(script, record["d"], monkeypatch)
    assert exit_code == code
    shown = "as transposed core matrices" if release == "3.6.0" else "with a 32-byte swizzle"
    assert f"exactly the answer of the unswizzled operand read {shown}" in observed
    assert ("is gone" in observed) == (code == 0)


def test_the_plain_script_exits_1_on_any_wrong_product(monkeypatch):
    record = RECORDED[0]
    script = TritonWgmma().reproducer_script(_case(record))
    assert _verdict(script, record["d"], monkeypatch)[0] == 1
    assert _verdict(script, TritonWgmma().expected(_case(record)), monkeypatch) == (0, "observed: as expected")
