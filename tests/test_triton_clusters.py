"""triton.convert_layout_cluster: layouts over a cluster of CTAs (the paper's block dimension, Triton's num_ctas)."""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.layouts import cta_tiling, distributed_layout_sharing
from layoutfuzz.generators.source import RandomSource
from layoutfuzz.generators.validity import check_layout_kind
from layoutfuzz.gpu.targets.triton_convert_layout_cluster import CLUSTER_DIMS, TritonConvertLayoutCluster, ctas_tile
from layoutfuzz.harness.target import make_case
from layoutfuzz.oracles.algorithms import holders
from layoutfuzz.oracles.linear_layout import LinearLayout

SHAPES = st.lists(st.integers(0, 5), min_size=1, max_size=3).map(lambda bits: [(f"dim{i}", 1 << b) for i, b in enumerate(bits)])


@given(SHAPES, st.integers(1, 3), st.integers(0, 2**32))
def test_cta_tiling_takes_each_dims_top_bits(outs, block_bits, seed):
    tiling = cta_tiling(RandomSource(seed), outs, block_bits, CLUSTER_DIMS)
    blocks = dict(tiling.in_dims)["block"]
    assert len(blocks) == block_bits and all(not dict(tiling.in_dims)[d] for d in ("register", "lane", "warp"))
    for d, (_, size) in enumerate(outs):
        taken = sorted((b[d] for b in blocks if b[d]), reverse=True)
        # the CTAs along dim d split it into equal tiles: its top bits, each once
        assert taken == [size >> k for k in range(1, len(taken) + 1)]
        assert all(not any(v for i, v in enumerate(b) if i != d) for b in blocks if b[d])  # one bit per basis
    assert ctas_tile(tiling)


@given(SHAPES, st.integers(0, 3), st.integers(0, 2), st.integers(0, 2**32))
def test_a_layout_sharing_the_block_bases_is_distributed_over_the_same_ctas(outs, block_bits, warps, seed):
    source = RandomSource(seed)
    tiling = cta_tiling(source, outs, block_bits, CLUSTER_DIMS)
    layout = distributed_layout_sharing(source, tiling, ("block",), 2, {"lane": 5, "warp": warps})
    check_layout_kind(layout, "distributed")  # Def 4.10: one bit per column, no repeat, surjective
    assert layout.dim_columns("block") == tiling.dim_columns("block")
    assert dict(layout.in_sizes)["lane"] == 32 and dict(layout.in_sizes)["warp"] == 1 << warps


def test_holders_number_threads_across_the_cluster():
    # 4 elements, 2 CTAs of 1 warp: element i is held by lane i % 2 of CTA i // 2 (lanes 2..16 broadcast)
    layout = LinearLayout.from_bases({"register": [], "lane": [[1], [0], [0], [0], [0]], "warp": [], "block": [[2]]},
                                     [("dim0", 4)])
    assert holders(layout, [4]) == [0, 1, 32, 33]
    # 2 warps a CTA: a CTA has 64 threads; CTA 1's first thread is 64
    layout = LinearLayout.from_bases({"register": [], "lane": [[0]] * 5, "warp": [[1]], "block": [[2]]}, [("dim0", 4)])
    assert holders(layout, [4]) == [0, 32, 64, 96]
    # a broadcast block basis: the copy of CTA 0 stores it
    layout = LinearLayout.from_bases({"register": [], "lane": [[1], [2], [0], [0], [0]], "warp": [], "block": [[0]]},
                                     [("dim0", 4)])
    assert holders(layout, [4]) == [0, 1, 2, 3]


def test_cases_span_their_ctas_with_shared_block_bases_and_both_kinds_of_blocks():
    target = TritonConvertLayoutCluster()
    families = collections.Counter()
    for i in range(120):
        case = make_case(target, 0, i)
        target.validate(case)
        p = case.params
        a, b = (LinearLayout.from_dict(p[k]) for k in ("a", "b"))
        assert dict(a.in_sizes)["block"] == p["num_ctas"] and a.dim_columns("block") == b.dim_columns("block")
        families[p["num_ctas"], target.family(case).rsplit(":", 1)[1]] += 1
    assert {n for n, _ in families} == {2, 4, 8}
    assert {kind for _, kind in families} == {"CTA tiles", "scattered blocks"}
    assert all(v in target.parameter_space().parameters[-1].values for v in ("CTA tiles", "scattered blocks"))


def test_validate_refuses_what_triton_cannot_lower_or_the_kernel_cannot_launch():
    target = TritonConvertLayoutCluster()
    case = next(c for c in (make_case(target, 0, i) for i in range(50))
                if len({tuple(b) for b in dict(LinearLayout.from_dict(c.params["a"]).in_dims)["block"]}) > 1)
    p = case.params
    b = LinearLayout.from_dict(p["b"])
    swapped = LinearLayout(tuple((n, bs[::-1] if n == "block" else bs) for n, bs in b.in_dims), b.out_dims)
    with pytest.raises(ValueError, match="share their block bases"):  # the same CTAs, numbered otherwise: data moves
        target.validate(Case(target.name, 0, 0, dict(p, b=swapped.to_dict())))
    with pytest.raises(ValueError, match="num_ctas"):
        target.validate(Case(target.name, 0, 0, dict(p, num_ctas=16)))
    with pytest.raises(ValueError, match="must span the kernel's"):
        target.validate(Case(target.name, 0, 0, dict(p, num_ctas=next(n for n in (2, 4, 8) if n != p["num_ctas"]))))


def test_shrinking_drops_ctas_from_both_layouts_at_once():
    target = TritonConvertLayoutCluster()
    case = next(c for c in (make_case(target, 0, i) for i in range(50)) if c.params["num_ctas"] == 4)
    fewer = [c for c in target.shrink(case) if c["num_ctas"] == 2]
    assert fewer and all(dict(LinearLayout.from_dict(c["a"]).in_sizes)["block"] == 2 for c in fewer)
    assert all(LinearLayout.from_dict(c["a"]).dim_columns("block") == LinearLayout.from_dict(c["b"]).dim_columns("block")
               for c in fewer)


def test_the_cluster_probe_compiles_for_a_cluster_launch():
    pytest.importorskip("triton")
    from layoutfuzz.gpu.prebuilt import from_triton
    from layoutfuzz.gpu.targets.gluon_kernel import compile_for_sm90

    target = TritonConvertLayoutCluster()
    case = next(c for c in (make_case(target, 0, i) for i in range(40)) if "CTA tiles" in target.family(c))
    spec = target.kernel_spec(case)
    compiled = compile_for_sm90(spec.kernel, spec.signature, spec.constexprs, spec.num_warps, spec.num_ctas)
    ptx = compiled.asm["ptx"]
    assert f".reqnctapercluster {case.params['num_ctas']}" in ptx and "%cluster_ctarank" in ptx
    assert from_triton(compiled).num_ctas == case.params["num_ctas"]  # what the cubin launcher makes a cluster of


SCATTERED = ("from layoutfuzz.generators.case import Case\n"
             "from layoutfuzz.gpu.targets.triton_convert_layout_cluster import TritonConvertLayoutCluster\n"
             "from layoutfuzz.gpu.targets.gluon_kernel import compile_for_sm90\n"
             "import json, sys\n"
             "t = TritonConvertLayoutCluster()\n"
             "s = t.kernel_spec(Case(t.name, 0, 0, json.load(open(sys.argv[1]))['params']))\n"
             "compile_for_sm90(s.kernel, s.signature, s.constexprs, s.num_warps, s.num_ctas)\n"
             "print('compiled')\n")


def test_finding_triton_3_6_aborts_on_block_bases_that_are_not_cta_tiles():
    # docs/findings.md: 3.6.0 kills the process (LLVM ERROR) on a DistributedLinearLayout whose block bases are not
    # its dims' top bits; 3.9.0 compiles it (the cluster campaign on the H100 checks what it computes)
    triton = pytest.importorskip("triton")
    from layoutfuzz.harness.triton_compat import parse_version

    root = Path(__file__).resolve().parent.parent
    case = root / "docs/results/cases/triton-cluster-scattered-blocks-abort.json"
    done = subprocess.run([sys.executable, "-c", SCATTERED, str(case)], capture_output=True, text=True, timeout=300, cwd=root)
    version = parse_version(triton.__version__)
    if version >= (3, 9, 0):
        assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-2000:]
    elif version < (3, 7, 0):
        assert done.returncode != 0 and "LLVM ERROR: Invalid basis" in done.stderr
    else:
        pytest.skip(f"Triton {triton.__version__} was not checked")


@pytest.mark.gpu
def test_cluster_conversions_on_the_gpu_match_the_oracle():
    import triton

    from layoutfuzz.harness.triton_compat import parse_version

    target = TritonConvertLayoutCluster()
    ran = 0
    for index in range(40):
        case = make_case(target, 0, index)
        if "scattered" in target.family(case) and parse_version(triton.__version__) < (3, 9, 0):
            continue  # aborts the compiler: the finding above
        assert target.compare(case, target.expected(case), target.observed(case)).ok, case.params
        ran += 1
    assert ran >= 20


def test_kernels_files_a_compiler_abort_with_its_fatal_error(tmp_path):
    # `layoutfuzz kernels` under a Triton that aborts on the reproducer files the abort with the LLVM error it printed
    triton = pytest.importorskip("triton")
    from layoutfuzz.gpu.prebuilt import CompiledKernel
    from layoutfuzz.harness.triton_compat import parse_version

    if parse_version(triton.__version__) >= (3, 7, 0):
        pytest.skip(f"Triton {triton.__version__} compiles the reproducer (the abort is 3.6.0's)")
    root = Path(__file__).resolve().parent.parent
    case = root / "docs/results/cases/triton-cluster-scattered-blocks-abort.json"
    done = subprocess.run([sys.executable, "-m", "layoutfuzz.harness.cli", "kernels", "--case", str(case), "--out", "k", "-q"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "1 crashed" in done.stdout, done.stderr[-2000:]
    (filed,) = tmp_path.glob("k/triton-*/triton.convert_layout_cluster/*.json")
    rejected = CompiledKernel.from_json(filed.read_text()).rejected
    assert rejected.startswith("the compiler crashed (exit -6): LLVM ERROR: Invalid basis 2 for in-dim 'lane'"), rejected
    assert not list(tmp_path.glob("k/triton-*/.compile-*.log"))  # the workers' logs are gone
