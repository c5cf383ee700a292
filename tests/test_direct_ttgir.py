"""The convert and shared probes' TTGIR written without Gluon's frontend (gpu.direct_ttgir): the same module as the frontend's, the
same PTX, and trusted per process only after it agreed."""

from __future__ import annotations

import pytest

from layoutfuzz.harness.target import make_case
from layoutfuzz.oracles.linear_layout import LinearLayout


@pytest.fixture(autouse=True)
def triton_cache(tmp_path, monkeypatch):
    pytest.importorskip("triton.experimental.gluon")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))


def _frontend_ttgir(target, case) -> str:
    from layoutfuzz.gpu.targets.gluon_kernel import compile_for_sm90

    spec = target.kernel_spec(case)
    return compile_for_sm90(spec.kernel, spec.signature, spec.constexprs, spec.num_warps, spec.num_ctas).asm["ttgir"]


def _cases(target, want: int, keep=lambda params: True):
    found, index = [], 0
    while len(found) < want:
        case = make_case(target, 41, index)
        index += 1
        if keep(case.params):
            found.append(case)
    return found


def test_the_written_module_is_the_frontends_for_every_rank_and_cluster():
    from layoutfuzz.gpu.direct_ttgir import canonical
    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout
    from layoutfuzz.gpu.targets.triton_convert_layout_cluster import TritonConvertLayoutCluster, ctas_tile

    plain, cluster = TritonConvertLayout(), TritonConvertLayoutCluster()
    cases = [(plain, c) for rank in (1, 2, 3) for c in _cases(plain, 4, lambda p, r=rank: len(p["shape"]) == r)]
    # scattered blocks abort Triton 3.6.0's compiler (a known finding): the CTA tiles it compiles
    cases += [(cluster, c) for c in _cases(cluster, 4, lambda p: ctas_tile(LinearLayout.from_dict(p["a"])))]
    for target, case in cases:
        assert canonical(target.direct_ttgir(case)) == canonical(_frontend_ttgir(target, case)), case.params


def test_the_written_shared_probe_is_the_frontends_for_every_kind_of_shared_layout():
    from layoutfuzz.generators.case import Case
    from layoutfuzz.gpu.direct_ttgir import canonical
    from layoutfuzz.gpu.targets.triton_shared_memory import TritonSharedMemory

    target = TritonSharedMemory()
    for kind in ("swizzled_shared", "nvmma_shared", "linear"):
        cases = _cases(target, 3, lambda p, k=kind: p["kind"] == k and 1 not in p["shape"] and "view" not in p)
        same = Case(target.name, 41, 0, {**cases[0].params, "b": cases[0].params["a"]})  # B's offsets are A's
        for case in [*cases, same]:
            assert canonical(target.direct_ttgir(case)) == canonical(_frontend_ttgir(target, case)), case.params
    thin = _cases(target, 1, lambda p: 1 in p["shape"] and "view" not in p)[0]
    assert target.direct_ttgir(thin) is None  # a size-1 dim: through the front end


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_one_layout_on_both_sides_shares_its_offsets_as_the_frontend_does(rank):
    from layoutfuzz.generators.case import Case
    from layoutfuzz.gpu.direct_ttgir import canonical
    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout

    target = TritonConvertLayout()
    base = _cases(target, 1, lambda p: len(p["shape"]) == rank)[0]
    case = Case(target.name, base.seed, base.index, {**base.params, "b": base.params["a"]})
    written = target.direct_ttgir(case)
    assert "#B" not in written
    assert canonical(written) == canonical(_frontend_ttgir(target, case))


def test_a_kernel_compiled_from_the_written_module_has_the_frontends_ptx_and_launch_facts():
    from layoutfuzz.gpu.direct_ttgir import compile_ttgir
    from layoutfuzz.gpu.prebuilt import from_triton
    from layoutfuzz.gpu.targets.gluon_kernel import compile_for_sm90
    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout

    def code(ptx: str) -> list[str]:  # the PTX without its debug lines and sections
        lines = []
        for line in ptx.splitlines():
            if ".section" in line:
                break
            if not line.strip().startswith((".loc", ".file", "$L__")):
                lines.append(line)
        return lines

    target = TritonConvertLayout()
    for case in _cases(target, 3, lambda p: len(p["shape"]) > 1):
        spec = target.kernel_spec(case)
        frontend = compile_for_sm90(spec.kernel, spec.signature, spec.constexprs, spec.num_warps)
        written = compile_ttgir(target.direct_ttgir(case), spec.kernel.__name__, spec.num_warps)
        assert code(written.asm["ptx"]) == code(frontend.asm["ptx"])
        mine, theirs = from_triton(written), from_triton(frontend)
        assert (mine.name, mine.num_warps, mine.shared, mine.params) == (theirs.name, theirs.num_warps, theirs.shared, theirs.params)


def test_the_written_module_is_trusted_only_after_it_agreed_and_checked_again_now_and_then(monkeypatch):
    from layoutfuzz.gpu import direct_ttgir
    from layoutfuzz.gpu.direct_ttgir import CHECK_EVERY, DirectTtgir, convert_probe_ttgir

    a = LinearLayout.from_bases({"register": [], "lane": [[1], [2], [4], [8], [16]], "warp": []}, [("dim0", 32)])
    text = convert_probe_ttgir([32], 32, a, a, 1)
    trust = DirectTtgir()
    assert not trust.wanted("convert_probe_1d")  # never seen: through the frontend, and checked
    assert trust.check("convert_probe_1d", text, text)
    uses = [trust.wanted("convert_probe_1d") for _ in range(2 * CHECK_EVERY)]
    assert uses.count(False) == 2 and not uses[CHECK_EVERY - 1] and not uses[2 * CHECK_EVERY - 1]
    with pytest.warns(UserWarning, match="differs from Gluon's"):
        assert not trust.check("convert_probe_1d", text, text + "not MLIR")
    assert not any(trust.wanted("convert_probe_1d") for _ in range(2 * CHECK_EVERY))
    assert not trust.check("convert_probe_1d", text, text)  # a disagreement is for good
    monkeypatch.setattr(direct_ttgir, "canonical", lambda text: text)
    other = DirectTtgir()
    with pytest.warns(UserWarning):
        assert not other.check("convert_probe_2d", "a", "b") and not other.wanted("convert_probe_2d")


def test_a_target_compiles_through_the_frontend_first_then_from_the_written_module(monkeypatch):
    from layoutfuzz.gpu.direct_ttgir import DirectTtgir
    from layoutfuzz.gpu.targets import gluon_kernel as triton_targets
    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout

    monkeypatch.setattr(triton_targets, "_DIRECT", DirectTtgir())
    calls = []
    frontend, written = triton_targets.compile_for_sm90, triton_targets.compile_ttgir
    monkeypatch.setattr(triton_targets, "compile_for_sm90", lambda *a: calls.append("frontend") or frontend(*a))
    monkeypatch.setattr(triton_targets, "compile_ttgir", lambda *a: calls.append("written") or written(*a))
    target = TritonConvertLayout()
    cases = _cases(target, 3, lambda p: len(p["shape"]) == 1)
    kernels = [target.compile(case) for case in cases]
    assert calls == ["frontend", "written", "written"]
    assert all(k.cubin[:4] == b"\x7fELF" and not k.rejected for k in kernels)
    # a written module that fails to compile is compiled through Gluon, whose answer (and error) is the case's
    monkeypatch.setattr(triton_targets, "compile_ttgir", lambda *a: calls.append("written") or 1 / 0)
    calls.clear()
    assert target.compile(cases[0]).cubin[:4] == b"\x7fELF"
    assert calls == ["written", "frontend"]


def test_single_threaded_mlir_gives_the_same_llvm_ir_and_ptx(tmp_path, monkeypatch):
    # campaigns compile with MLIR_DISABLE_MULTITHREADING=1 (one thread per compiling process); what is under
    # test must not change with it. Compiled from one path, so that the debug file names are equal too.
    import triton
    from triton.backends.compiler import GPUTarget

    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout
    from layoutfuzz.gpu.targets.triton_shared_memory import TritonSharedMemory

    source = tmp_path / "probe.ttgir"
    for target in (TritonConvertLayout(), TritonSharedMemory()):
        for case in _cases(target, 3, lambda p: 1 not in p["shape"] and "view" not in p):  # modules the harness writes
            spec = target.kernel_spec(case)
            source.write_text(target.direct_ttgir(case, spec))
            stages = []
            for threads in ("0", "1"):
                monkeypatch.setenv("MLIR_DISABLE_MULTITHREADING", threads)
                monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / f"cache-{threads}"))
                compiled = triton.compile(str(source), target=GPUTarget("cuda", 90, 32),
                                          options={"num_warps": spec.num_warps, "num_ctas": spec.num_ctas})
                stages.append((compiled.asm["llir"], compiled.asm["ptx"]))
            assert stages[0] == stages[1], case.case_id


def test_campaign_compiles_keep_a_users_mlir_threading(monkeypatch):
    import os

    from layoutfuzz.gpu.targets.gluon_kernel import single_threaded_mlir

    monkeypatch.delenv("MLIR_DISABLE_MULTITHREADING", raising=False)
    single_threaded_mlir()
    assert os.environ["MLIR_DISABLE_MULTITHREADING"] == "1"
    monkeypatch.setenv("MLIR_DISABLE_MULTITHREADING", "0")
    single_threaded_mlir()
    assert os.environ["MLIR_DISABLE_MULTITHREADING"] == "0"


def test_a_gluon_constructor_refusing_a_layout_is_the_front_ends_answer_not_a_harness_error():
    # one element: Gluon's SharedLinearLayout refuses empty offset bases (a known Triton root cause), the case is valid
    pytest.importorskip("triton.experimental.gluon", reason="needs Triton with Gluon")
    from layoutfuzz.generators.case import Case
    from layoutfuzz.harness import registry

    target = registry.load("triton.shared_memory")
    zeros = [[0, 0]] * 5
    layout = {"bases": [["register", []], ["lane", zeros], ["warp", []]], "out_dims": [["dim0", 1], ["dim1", 1]]}
    case = Case(target.name, 0, 0, {"kind": "linear", "shape": [1, 1], "num_warps": 1, "elem_bits": 32, "a": layout,
                                    "b": layout, "offset_bases": []})
    target.validate(case)
    kernel = target.compile(case)
    assert "SharedLinearLayout offset_bases must not be empty" in kernel.rejected
    broken = Case(target.name, 0, 0, {k: v for k, v in case.params.items() if k != "offset_bases"})
    with pytest.raises(KeyError):  # an error of the harness's own code stays one
        target.compile(broken)
