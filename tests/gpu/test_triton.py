"""GPU targets over generated Triton/Gluon kernels: CPU-side oracle and compilation, and (marked
gpu) the hardware run."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.targets.gluon_kernel import POINTERS, compile_for_sm90, gluon_layout
from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout
from layoutfuzz.gpu.targets.triton_shared_memory import TritonSharedMemory
from layoutfuzz.gpu.targets.triton_tma import TritonTma
from layoutfuzz.gpu.targets.triton_wgmma import MMA_BITS, TritonWgmma
from layoutfuzz.gpu.tensor_descriptors import encoded_maps
from layoutfuzz.harness.target import make_case
from layoutfuzz.oracles.algorithms import holders
from layoutfuzz.oracles.linear_layout import LinearLayout


def test_holders_are_the_first_copy_of_each_element():
    # 8 elements over 2 registers and 32 lanes of which lanes 4, 8, 16 broadcast: thread 0..3 hold them
    layout = LinearLayout.from_bases({"register": [[1]], "lane": [[2], [4], [0], [0], [0]], "warp": []}, [("dim0", 8)])
    assert holders(layout, [8]) == [0, 0, 1, 1, 2, 2, 3, 3]


def test_generated_pairs_cover_every_conversion_kind():
    target = TritonConvertLayout()
    kinds = collections.Counter(target.family(make_case(target, 0, i)).split(":")[0] for i in range(150))
    assert {"register", "shuffle", "shared"} <= set(kinds)
    for i in range(30):
        target.validate(make_case(target, 0, i))


def test_a_sample_of_the_probe_kernels_compiles_for_sm_90():
    pytest.importorskip("triton")

    from layoutfuzz.gpu.gluon_probes import CONVERT_PROBES

    target = TritonConvertLayout()
    for index in range(3):
        p = make_case(target, 1, index).params
        shape = p["shape"]
        constexprs = {"A": gluon_layout(LinearLayout.from_dict(p["a"]), shape), "B": gluon_layout(LinearLayout.from_dict(p["b"]), shape)}
        constexprs |= {f"S{i}": s for i, s in enumerate(shape)}
        pointer = POINTERS[p["elem_bits"]]
        signature = {"src": pointer, "dst": pointer, "tid_a": "*i32", "tid_b": "*i32"}
        kernel = compile_for_sm90(CONVERT_PROBES[len(shape)], signature, constexprs, p["num_warps"])
        assert "%tid.x" in kernel.asm["ptx"]


@pytest.mark.gpu
def test_conversions_on_the_gpu_match_the_oracle():
    target = TritonConvertLayout()
    for index in range(40):
        case = make_case(target, 0, index)
        assert target.compare(case, target.expected(case), target.observed(case)).ok, case.params


@pytest.mark.gpu
def test_the_prebuilt_kernel_targets_run_without_torch(tmp_path):
    # their buffers are NumPy's on the device (gpu.device_arrays): a campaign's fork server and workers skip torch's
    # import and CUDA start (seconds); a case that still pulled torch in would show in the subprocess's modules
    code = (
        "import sys\n"
        "from layoutfuzz.harness import registry\n"
        "from layoutfuzz.harness.target import make_case\n"
        "from layoutfuzz.harness.worker import evaluate\n"
        "for name in ('triton.convert_layout', 'triton.shared_memory'):\n"
        "    target = registry.load(name)\n"
        "    for module in target.preload:\n"
        "        __import__(module)\n"
        "    target.warm_up()\n"
        "    print(name, [evaluate(target, make_case(target, 0, i))['outcome'] for i in range(4)])\n"
        "print('torch imported:', 'torch' in sys.modules)\n")
    env = {**__import__("os").environ, "LAYOUTFUZZ_CACHE": str(tmp_path / "cache"), "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines == ["triton.convert_layout ['pass', 'pass', 'pass', 'pass']", "triton.shared_memory ['pass', 'pass', 'pass', 'pass']",
                     "torch imported: False"], done.stdout


def test_shared_memory_cases_are_memory_layouts_and_placements_are_permutations():
    target = TritonSharedMemory()
    kinds = collections.Counter()
    for index in range(60):
        case = make_case(target, 0, index)
        target.validate(case)
        if case.params.get("view") == "permute":  # read back through the permuted view: no placement dump
            assert target.expected(case) == {"permuted view mismatches": 0}
            continue
        placement = target.expected(case)["placement"]
        assert sorted(placement) == list(range(len(placement)))
        assert len(placement) <= 1 << case.params["elem_bits"]
        kinds[case.params["kind"]] += 1
    assert set(kinds) == {"swizzled_shared", "nvmma_shared", "linear"}


def test_a_sample_of_the_shared_probe_kernels_compiles_for_sm_90():
    pytest.importorskip("triton")
    from triton.experimental.gluon import language as ttgl

    from layoutfuzz.gpu.gluon_probes import shared_probe_2d
    from layoutfuzz.harness.triton_compat.gluon_layouts import shared_linear, to_gluon
    from layoutfuzz.oracles import triton_layouts as tl

    target = TritonSharedMemory()
    seen = set()
    for index in range(40):
        p = make_case(target, 2, index).params
        if p["kind"] in seen:
            continue
        seen.add(p["kind"])
        shape = p["shape"]
        shared = shared_linear(p["offset_bases"]) if "offset_bases" in p else to_gluon(tl.from_dict(p["shared"]))
        constexprs = {"A": gluon_layout(LinearLayout.from_dict(p["a"]), shape), "B": gluon_layout(LinearLayout.from_dict(p["b"]), shape),
                      "S": shared, "F": ttgl.BlockedLayout([1], [32], [p["num_warps"]], [0]), "S0": shape[0], "S1": shape[1]}
        pointer = POINTERS[p["elem_bits"]]
        signature = {"src": pointer, "dst": pointer, "raw": pointer}
        kernel = compile_for_sm90(shared_probe_2d, signature, constexprs, p["num_warps"])
        assert "st.shared" in kernel.asm["ptx"] or "stmatrix" in kernel.asm["ptx"]
    assert seen == {"swizzled_shared", "nvmma_shared", "linear"}


@pytest.mark.gpu
def test_shared_memory_round_trips_on_the_gpu_match_the_oracle():
    target = TritonSharedMemory()
    for index in range(30):
        case = make_case(target, 0, index)
        assert target.compare(case, target.expected(case), target.observed(case)).ok, case.params


# ---- triton.tma -------------------------------------------------------------------------------

def _tma_signature(p):
    """``tma_probe``'s signature and constexprs for the (partial) case ``p``, as ``triton.tma`` compiles it."""
    spec = TritonTma().kernel_spec(Case("triton.tma", 0, 0, p))
    return spec.signature, spec.constexprs


@pytest.mark.slow
def test_tma_box_placement_agrees_with_the_nvmma_shared_oracle():
    # two oracles: 5.5.7's boxes (oracles/tma.py) and Triton's NVMMA shared layout (oracles/triton_layouts.py)
    from layoutfuzz.oracles import triton_layouts as tl
    from layoutfuzz.oracles.tma import block_boxes

    target = TritonTma()
    for index in range(120):
        p = make_case(target, 0, index).params
        e = p["elem_bits"] // 8
        layout = tl.NVMMASharedLayout(p["swizzle"], p["elem_bits"], len(p["block"])).linear_layout(p["block"])
        names = [n for n, _ in layout.out_dims]
        for column, box in block_boxes(p["block"], e, p["swizzle"]):
            for index_ in box.indices():
                at = list(reversed(index_))
                at[-1] += column
                where = layout.apply({"offset": box.address(index_) // e})
                assert [where[n] for n in names] == at, p


def test_tma_cases_are_valid_aligned_and_cover_every_mode():
    target = TritonTma()
    families, overhanging = collections.Counter(), 0
    for index in range(300):
        case = make_case(target, 0, index)
        target.validate(case)
        p = case.params
        families[target.family(case)] += 1
        overhanging += any(c < 0 or c + b > n for c, b, n in zip(p["coord"], p["block"], p["global_shape"]))
        assert (p["coord"][-1] * p["elem_bits"] // 8) % 16 == 0
    assert len(families) == 12 and overhanging > 30


def test_a_tma_store_past_the_bound_is_classified():
    target = TritonTma()
    p = {"elem_bits": 32, "swizzle": 32, "block": [8, 8], "global_shape": [8, 5], "coord": [0, 0], "row_pad": 3, "num_warps": 1}
    case = Case("triton.tma", 0, 0, p)
    target.validate(case)
    expected = target.expected(case)
    store = bytearray(bytes.fromhex(expected["store"]))
    store[5 * 4:6 * 4] = b"\1\2\3\4"  # element (0, 5): past the bound 5, inside the granule [4, 8)
    observed = {**expected, "store": store.hex(), "raw_store_past_bound": True}  # the raw store (no Triton) did the same
    assert target.compare(case, expected, observed).signature == "store:granule-past-inner-bound"
    alone = {**observed, "raw_store_past_bound": False}
    assert target.compare(case, expected, alone).signature == "store:granule-past-inner-bound, Triton only"
    assert target.attribute("diverge", "store:granule-past-inner-bound").party == "hardware"
    assert target.attribute("diverge", "store:granule-past-inner-bound, Triton only") is None  # then: Triton's
    store[0] ^= 1  # and one wrong element inside the bound
    assert target.compare(case, expected, {**expected, "store": store.hex()}).signature == "store:misplaced data"


def test_triton_encodes_the_tensor_maps_the_oracle_predicts():
    pytest.importorskip("triton")
    from layoutfuzz.gpu.gluon_probes import tma_probe
    from layoutfuzz.gpu.targets.gluon_kernel import compile_for_sm90

    target = TritonTma()
    seen = set()
    for index in range(60):
        p = make_case(target, 3, index).params
        if (p["swizzle"], len(p["block"])) in seen:
            continue
        seen.add((p["swizzle"], len(p["block"])))
        signature, constexprs = _tma_signature(p)
        kernel = compile_for_sm90(tma_probe, signature, constexprs, p["num_warps"])
        maps = encoded_maps(kernel.metadata.tensordesc_meta)
        assert maps == target.tensor_maps(p), p
        assert "cp.async.bulk.tensor" in kernel.asm["ptx"]
    assert len(seen) == 8


def _python(script: str) -> subprocess.CompletedProcess:
    """Runs ``script`` in a fresh interpreter at the repository root (what aborts or traps ends there)."""
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2])


def test_finding_triton_aborts_on_a_tma_block_narrower_than_the_swizzle():
    # docs/findings.md: Triton 3.6.0 kills the process (LLVM ERROR) instead of rejecting the layout; 3.7.1, 3.8.0
    # and 3.9.0 reject it in the front end with a Python exception (checked here)
    triton = pytest.importorskip("triton")
    from layoutfuzz.harness.triton_compat import parse_version

    script = (
        "from tests.gpu.test_triton import _tma_signature\n"
        "from layoutfuzz.gpu.gluon_probes import tma_probe\n"
        "from layoutfuzz.gpu.targets.gluon_kernel import compile_for_sm90\n"
        "p = {'elem_bits': 8, 'swizzle': 64, 'block': [8, 32], 'coord': [0, 0], 'num_warps': 4}\n"
        "compile_for_sm90(tma_probe, *_tma_signature(p), 4)\n"
    )
    done = _python(script)
    if parse_version(triton.__version__) >= (3, 7, 1):
        assert done.returncode == 1 and "LLVM ERROR" not in done.stderr
        assert "too small for the swizzle byte size 64 in an NVMMASharedLayout" in done.stderr
    else:
        assert done.returncode != 0 and "LLVM ERROR: Block shape is too small for the swizzle" in done.stderr


@pytest.mark.gpu
def test_tma_loads_and_stores_on_the_gpu_match_the_oracle():
    target = TritonTma()
    for index in range(60):
        case = make_case(target, 0, index)
        if min(case.params["coord"]) < 0:  # traps the device: the test below
            continue
        verdict = target.compare(case, target.expected(case), target.observed(case))
        # a store writing the whole 16-byte granule past the bound is the known finding (docs/findings.md)
        assert verdict.ok or verdict.signature == "store:granule-past-inner-bound", (case.params, verdict.note)


@pytest.mark.gpu
def test_finding_a_tma_copy_at_a_negative_coordinate_traps_the_device():
    # docs/findings.md: every case with a negative coordinate ends in "illegal instruction" on an H100
    script = (
        "from layoutfuzz.generators.case import Case\n"
        "from layoutfuzz.gpu.targets.triton_tma import TritonTma\n"
        "p = {'elem_bits': 16, 'swizzle': 64, 'block': [16, 32], 'global_shape': [40, 64], 'coord': [-2, 0],"
        " 'row_pad': 0, 'num_warps': 4}\n"
        "print(TritonTma().observed(Case('triton.tma', 0, 0, p)))\n"
    )
    done = _python(script)
    assert done.returncode == 70 and "illegal instruction" in done.stderr


# ---- triton.wgmma -----------------------------------------------------------------------------

def _wgmma_compile(p):
    from layoutfuzz.gpu.targets.gluon_kernel import compile_for_sm90

    spec = TritonWgmma().kernel_spec(Case("triton.wgmma", 0, 0, p))
    return compile_for_sm90(spec.kernel, spec.signature, spec.constexprs, spec.num_warps)


def test_wgmma_cases_are_valid_and_cover_types_majors_and_sources():
    target = TritonWgmma()
    seen = collections.defaultdict(set)
    for index in range(400):
        case = make_case(target, 0, index)
        target.validate(case)
        p = case.params
        for key in ("mma", "acc", "a_in_regs", "a_mn_major", "b_k_major", "a_swizzle", "b_swizzle", "num_warps"):
            seen[key].add(p[key])
        assert len(target.expected(case)) == p["M"] * p["N"]
    assert seen["mma"] == set(MMA_BITS) and seen["acc"] == {"f32", "f16", "i32"}
    assert all(seen[k] == {False, True} for k in ("a_in_regs", "a_mn_major", "b_k_major"))
    assert seen["a_swizzle"] == seen["b_swizzle"] == {0, 32, 64, 128}  # 0: 16-bit operands (lowered from 3.8.0)


def test_wgmma_rejects_mn_major_operands_of_other_than_16_bits():
    p = dict(make_case(TritonWgmma(), 0, 0).params, mma="e4m3", acc="f32", a_mn_major=True, a_in_regs=False)
    with pytest.raises(ValueError, match="16-bit"):
        TritonWgmma().validate(Case("triton.wgmma", 0, 0, p))


def test_the_wgmma_probe_emits_the_requested_instruction_for_every_mma_type():
    pytest.importorskip("triton")
    kinds = {"f16": ".f16.f16", "bf16": ".bf16.bf16", "tf32": ".tf32.tf32", "e4m3": ".e4m3.e4m3", "e5m2": ".e5m2.e5m2", "i8": ".s8.s8"}
    target = TritonWgmma()
    done = set()
    for index in range(200):
        p = make_case(target, 4, index).params
        if p["mma"] in done or (p["mma"] == "i8" and p["instr_n"] == 256):
            continue
        done.add(p["mma"])
        ptx = _wgmma_compile(p).asm["ptx"]
        shape = f"m64n{p['instr_n']}k{256 // MMA_BITS[p['mma']]}"
        assert f"wgmma.mma_async.sync.aligned.{shape}" in ptx and kinds[p["mma"]] in ptx, p
    assert done == set(MMA_BITS)


@pytest.mark.parametrize("change, why", [
    ({"mma": "i8", "acc": "i32", "a_dtype": "i8", "b_dtype": "i8", "instr_n": 256, "N": 256, "K": 64}, "int8 with n = 256"),
    ({"a_swizzle": 0}, "an unswizzled NVMMA operand"),
])
def test_finding_triton_cannot_lower_valid_wgmma(change, why):
    # docs/findings.md: PTX allows both; Triton 3.6.0 to 3.9.0 fail inside their LLVM lowering (checked here)
    pytest.importorskip("triton")
    base = {"a_dtype": "i8", "b_dtype": "i8", "mma": "f16", "acc": "f32", "M": 64, "N": 64, "K": 32, "num_warps": 4,
            "warps_per_cta": [4, 1], "instr_n": 64, "a_swizzle": 64, "b_swizzle": 64, "a_in_regs": False,
            "a_mn_major": False, "b_k_major": True, "use_acc": True}
    _wgmma_compile(base)  # the same kernel without the change compiles
    with pytest.raises(RuntimeError, match="PassManager::run failed"):
        _wgmma_compile({**base, **change})


@pytest.mark.gpu
def test_wgmma_products_on_the_gpu_are_exact():
    target = TritonWgmma()
    for index in range(40):
        case = make_case(target, 0, index)
        observed = target.observed(case)
        if isinstance(observed, dict):  # a compile rejection is a finding, checked above
            continue
        assert target.compare(case, target.expected(case), observed).ok, case.params


# ---- the reduced divergences of the H100 campaign (docs/results/triton-gpu-targets-h100.md) ----

CASES = Path(__file__).resolve().parents[2] / "docs" / "results" / "cases"


@pytest.mark.parametrize("name", sorted(p.name for p in CASES.glob("*.json")))
def test_the_reduced_cases_are_valid_cases_of_their_target(name):
    from layoutfuzz.harness.registry import load

    case = Case.from_dict(json.loads((CASES / name).read_text()))
    load(case.target).validate(case)


@pytest.mark.gpu
def test_the_reduced_8_bit_conversion_loses_data_where_its_range_says():
    # docs/findings.md: 3.6.0 and 3.7.1 miscompile this 8-bit convert_layout, 3.8.0 and later do not (the ledger's
    # range, from `layoutfuzz bisect --kernels` on an H100); this runs the Triton under test (or its prebuilt kernels)
    from layoutfuzz.harness.triton_compat import parse_version, version
    from tests.conftest import known_problem

    case = Case.from_dict(json.loads((CASES / "convert-layout-8bit-min.json").read_text()))
    problem = known_problem("convert-layout-8bit-min.json")
    target = TritonConvertLayout()
    observed = target.observed(case)
    assert target.compare(case, target.expected(case), {**observed, "data_mismatches": 0}).ok  # holders are right
    if problem.present_in(".".join(map(str, version())), parse_version):
        assert observed["data_mismatches"] == 64
    else:
        assert observed["data_mismatches"] == 0


def test_a_packed_conversion_kernel_compiles_with_one_conversion_per_case():
    # benchmarks/packed_compile.py measures it against one kernel per case (slower: not used by campaigns)
    pytest.importorskip("triton")
    from layoutfuzz.gpu.gluon_probes import convert_probe_packed_2d
    from layoutfuzz.gpu.targets.gluon_kernel import compile_for_sm90

    target = TritonConvertLayout()
    group = [p for p in (make_case(target, 11, i).params for i in range(200))
             if len(p["shape"]) == 2 and p["elem_bits"] == 32 and p["num_warps"] == 4][:2]
    layouts = [(gluon_layout(LinearLayout.from_dict(p["a"]), p["shape"]), gluon_layout(LinearLayout.from_dict(p["b"]), p["shape"]))
               for p in group]
    kernel = compile_for_sm90(convert_probe_packed_2d, {"src": "*i32", "dst": "*i32", "tid_a": "*i32", "tid_b": "*i32"},
                              {"AS": tuple(a for a, _ in layouts), "BS": tuple(b for _, b in layouts),
                               "S0S": tuple(p["shape"][0] for p in group), "S1S": tuple(p["shape"][1] for p in group),
                               "OFFS": (0, group[0]["shape"][0] * group[0]["shape"][1])}, 4)
    assert kernel.asm["ptx"].count("%tid.x") >= 4  # two holder records per conversion


def test_the_guard_zones_poison_is_a_nan_of_each_mma_type_and_a_large_int8():
    from layoutfuzz.gpu.targets.triton_wgmma import poison

    # IEEE binary16 quiet NaN, bfloat16's, binary32's (tf32 sits in fp32 storage), OCP FP8 E4M3's only NaN S.1111.111 and
    # an E5M2 NaN S.11111.10; int8 0x5A (90: every product of it is far from the cases' small values)
    assert {m: poison(m) for m in ("f16", "bf16", "tf32", "e4m3", "e5m2", "i8")} == {
        "f16": 0x7E00, "bf16": 0x7FC0, "tf32": 0x7FC00000, "e4m3": 0x7F, "e5m2": 0x7E, "i8": 0x5A}


def test_each_shared_wgmma_operand_sits_between_two_guard_buffers():
    # the compiled kernel holds three buffers per shared operand: a guard zone the compiler dropped would show here
    pytest.importorskip("triton")
    p = {"a_dtype": "f16", "b_dtype": "f16", "mma": "f16", "acc": "f32", "M": 64, "N": 64, "K": 64, "num_warps": 4,
         "warps_per_cta": [4, 1], "instr_n": 64, "a_swizzle": 128, "b_swizzle": 128, "a_in_regs": False,
         "a_mn_major": False, "b_k_major": True, "use_acc": True}
    operands = (64 * 64 + 64 * 64) * 2
    assert _wgmma_compile(p).metadata.shared >= 3 * operands
    assert _wgmma_compile({**p, "a_in_regs": True}).metadata.shared >= 3 * 64 * 64 * 2
