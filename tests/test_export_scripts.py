"""The reproducer scripts of triton.shared_layouts, triton.bank_conflicts, cute.smem_atoms, pycute.xor_swizzles,
mosaic.layout_relations and mosaic.layout_inference: the answer each computes inline agrees with layoutfuzz's oracle
on generated cases, and each exported ledger entry exits 1 where the ledger calls the release bad, 0 where good."""

from __future__ import annotations

import importlib.util
from math import prod
from pathlib import Path

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.cli import main
from layoutfuzz.harness.export import run_script
from layoutfuzz.harness.target import make_case

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "layoutfuzz-known.toml"
CASES = ROOT / "docs" / "results" / "cases"
ENVS = Path.home() / ".cache" / "layoutfuzz" / "envs"


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs {module}")


def _functions(script: str, first: str, names: tuple[str, ...]) -> dict:
    """The script's constants (its text from the docstring's end to ``first``) and the functions ``names``, run
    without its child process."""
    head = script.split('"""', 2)[2].split(first)[0]
    space: dict = {}
    exec(head, space)
    for name in names:
        body = script.split(f"\ndef {name}(")[1].split("\n\n\n")[0]
        exec(f"def {name}(" + body, space)
    return space


def _export(case: str, to: Path) -> Path:
    """repro.py of a ledger case file or a case id, exported with the shipped ledger."""
    what = str(CASES / case) if case.endswith(".json") else case
    assert main(["export", what, "--to", str(to), "--known", str(LEDGER)]) == 0
    return next(to.glob("*/repro.py"))


def test_smem_atom_script_places_every_element_where_the_oracle_does():
    from layoutfuzz.generators.smem_atoms import ELEMENTS
    from layoutfuzz.harness.targets.cute_smem_atoms import CuteSmemAtoms, reproducer
    from layoutfuzz.oracles import smem_atoms as atoms

    checked = 0
    for index in range(120):
        case = make_case(CuteSmemAtoms(), 5, index)
        p = case.params
        if not atoms.divides(p["kind"], ELEMENTS[p["element"]], p["shape"]) or prod(p["shape"]) > 1 << 14:
            continue
        space = _functions(reproducer(case), '\nCHILD = r"""', ("expected_address",))
        want = atoms.tile_bit_addresses(p["kind"], ELEMENTS[p["element"]], p["shape"], p["order"])
        assert [space["expected_address"](i) for i in range(len(want))] == want.tolist(), p
        checked += 1
    assert checked > 50


def test_smem_atom_script_wants_a_refusal_where_the_atom_does_not_divide():
    from layoutfuzz.harness.targets.cute_smem_atoms import reproducer

    case = Case("cute.smem_atoms", 0, 0, {"element": "f16", "kind": "K_SW128", "order": [0, 1], "shape": [8, 32]})
    space = _functions(reproducer(case), '\nCHILD = r"""', ())
    assert space["ATOM"] == (8, 64)  # 1024 bits of 16-bit elements: CuTe's K_SW128 atom, 8 x 64


def test_bank_conflict_script_counts_what_the_oracle_counts():
    _needs("triton")
    from layoutfuzz.harness.targets.triton_bank_conflicts import TritonBankConflicts, reproducer

    target, counts = TritonBankConflicts(), set()
    for index in range(80):
        case = make_case(target, 7, index)
        space = _functions(reproducer(case, *target._layouts(case)), '\nCHILD = r"""',
                           ("span", "vector_bits", "exact_conflicts"))
        want = target.expected(case)
        assert (space["exact_conflicts"](), 1 << space["vector_bits"]()) == (want["bank_conflicts"], want["vector"]), \
            case.params
        counts.add(want["bank_conflicts"])
    assert len(counts) > 2  # cases with and without conflicts


def test_shared_layout_script_wants_the_definitions_offsets():
    _needs("triton")
    from layoutfuzz.harness.targets.triton_shared_layouts import reproducer

    case = Case("triton.shared_layouts", 0, 0, {"elem_bits": 16, "kind": "swizzled_shared", "shape": [4, 8], "layout": {
        "kind": "swizzled_shared", "vec": 2, "per_phase": 1, "max_phase": 4, "order": [1, 0]}})
    space = _functions(reproducer(case), '\nCHILD = r"""', ())
    # Def 4.11: row r's column c sits at c ^ vec * (r % max_phase); offset bits 0-2 walk row 0, bits 3-4 the rows:
    # offset 8 is row 1, column 0 ^ 2 = 2 (index 10); offset 16 is row 2, column 4 (index 20)
    assert space["EXPECTED"] == [1, 2, 4, 10, 20]


def test_pycute_xor_swizzle_script_is_pycutes_swizzle_of_the_tile():
    from layoutfuzz.harness.targets.pycute_xor_swizzles import PycuteXorSwizzles

    case = Case("pycute.xor_swizzles", 0, 0, {"rows": 8, "cols": 16, "vec": 2, "per_phase": 2, "max_phase": 4,
                                              "elem_bits": 16})
    script = PycuteXorSwizzles().reproducer_script(case)
    assert "pycute.ComposedLayout(pycute.Swizzle(*SW), OFFSET, L(A))" in script
    # Swizzle<B,M,S>: B = log2 4, M = log2 2, S = log2 16 + log2 2 - 1 = 4
    assert "SW = (2, 1, 4)\n" in script and "A = ((8, 16), (16, 1))\n" in script


def _release_python(version: str) -> str:
    python = ENVS / f"triton-{version}-py311" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no cached Triton {version} environment under {ENVS}")
    return str(python)


@pytest.mark.slow
@pytest.mark.parametrize("case_file, version, code", [
    ("shared-layouts-unswizzled-transposed-rank3-zero-offset.json", "3.7.1", 0),  # ledger: first bad 3.8.0
    ("shared-layouts-unswizzled-transposed-rank3-zero-offset.json", "3.8.0", 1),
    ("shared-layouts-unswizzled-transposed-rank3-reordered.json", "3.6.0", 0),
    ("shared-layouts-unswizzled-transposed-rank3-reordered.json", "3.9.0", 1),
    ("bank-conflicts-under-count.json", "3.6.0", 1),  # bad from 3.6.0 on, no good release
    ("bank-conflicts-reshapeins-abort.json", "3.9.0", 1),
])
def test_triton_scripts_follow_the_ledger_range(tmp_path, case_file, version, code):
    _needs("triton")
    run = run_script(_export(case_file, tmp_path), _release_python(version))
    assert run.returncode == code, run.output
    assert "expected:" in run.output and "observed:" in run.output


@pytest.mark.slow
@pytest.mark.parametrize("case, module, code", [
    ("cute-dsl-tile-to-shape-pads.json", "cutlass", 1),
    ("cute-dsl-raked-product-refusal.json", "cutlass", 1),  # a refusal where the definition has an answer
    ("cute.smem_atoms/5/0", "cutlass", 0),  # an atom that divides: every element where CuTe puts it
    ("pycute-xor-swizzle-shift-0-recursion.json", "pycute", 1),
    ("pycute.xor_swizzles/0/3", "pycute", 0),  # a swizzle with a shift
])
def test_cpu_scripts_exit_as_the_installed_release_answers(tmp_path, case, module, code):
    _needs(module)
    run = run_script(_export(case, tmp_path))
    assert run.returncode == code, run.output
    assert "expected:" in run.output and "observed:" in run.output


def test_mosaic_scripts_tiling_rule_is_the_oracles():
    from layoutfuzz.harness.targets.mosaic_layout_relations import TILING_APPLIES
    from layoutfuzz.oracles import mosaic_relations as rel

    space: dict = {}
    exec(TILING_APPLIES, space)
    tiles = [[[64], [16], [8], [1]], [[128, 16], [32, 16]], [[4, 2, 16], [8], [1]], [[8], [2]], [[2, 3]]]
    shapes = [[128], [1, 128], [2, 128, 48], [1, 12, 6, 1], [8], [64, 32], [6], [4, 2, 16], [3, 1, 2, 48]]
    answers = {(str(t), str(s)): space["applies"](t, s) for t in tiles for s in shapes}
    assert answers == {(str(t), str(s)): rel.tiling_applies(t, s) for t in tiles for s in shapes}
    assert len(set(answers.values())) == 2
    assert space["applies"]([[128, 16]], [2, 128, 48]) and not space["applies"]([[64]], [1, 48])  # by hand


def test_mosaic_relation_script_broadcast_rule_is_numpys():
    np = pytest.importorskip("numpy")
    from layoutfuzz.harness.targets.mosaic_layout_relations import _DEFINITIONS

    space: dict = {"np": np}
    exec(_DEFINITIONS, space)
    pairs = [((1,), (4, 8)), ((8,), (4, 8)), ((4, 1), (4, 8)), ((2, 8), (4, 8)), ((4, 8), (8,)), ((1, 1), (1,)), ((), (3,))]
    for shape, target in pairs:
        try:
            numpy = np.broadcast_shapes(shape, target) == target
        except ValueError:
            numpy = False
        assert space["broadcasts"](shape, target) == numpy, (shape, target)


@pytest.mark.slow
@pytest.mark.parametrize("case, code", [
    ("mosaic-splat-left-aligned.json", 1),  # bad in jax 0.10.2 (fixed in 0.12.0.1)
    ("mosaic-reduce-canonicalize-raises.json", 1),
    ("mosaic-inference-rank1-reshape.json", 1),
    ("mosaic-inference-broadcast-tiling-rank.json", 1),
    ("mosaic.layout_relations/12/26", 0),  # a reduction Mosaic answers with a tiled layout (WGMMA_ROW_LAYOUT)
    ("mosaic.layout_inference/21/9", 0),  # layouts inferred, each as its op needs
    ("mosaic.layout_inference/21/8", 0),  # a refusal where layoutfuzz knows no consistent assignment
])
def test_mosaic_scripts_exit_as_the_installed_jax_answers(tmp_path, case, code):
    _needs("jax")
    run = run_script(_export(case, tmp_path))
    assert run.returncode == code, run.output
    assert "expected:" in run.output and "observed:" in run.output


@pytest.mark.slow
def test_mosaic_reduce_script_fails_a_reduced_layout_that_puts_elements_in_other_threads(tmp_path):
    _needs("jax")
    script = _export("mosaic.layout_relations/12/26", tmp_path)  # WGMMA_LAYOUT on (448, 8), reduced over axis 1
    call = next(line for line in script.read_text().splitlines() if line.startswith("    answer = "))
    script.write_text(script.read_text().replace(call, "    answer = cs.RegisterLayout(fa.WGMMA_COL_LAYOUT)"))
    run = run_script(script)
    assert run.returncode == 1 and "threads hold other elements" in run.output, run.output
