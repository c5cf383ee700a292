"""GPU targets that run generated Triton/Gluon kernels (issue: GPU drivers II)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from math import prod
from typing import Any, ClassVar

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.layouts import distributed_layout, split_bits
from layoutfuzz.generators.shrink import drop_basis, joint_out_dim_halvings, replaced
from layoutfuzz.generators.source import Source, permutation
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.generators.validity import check_layout_kind, check_shape, power_of_two
from layoutfuzz.gpu.device_arrays import device_input, device_output
from layoutfuzz.gpu.direct_ttgir import DirectTtgir, compile_ttgir, convert_probe_ttgir
from layoutfuzz.gpu.kernel_cache import cached_kernel, through_jit
from layoutfuzz.gpu.prebuilt import CompiledKernel, active_folder, folder_version, from_triton, kernel_path
from layoutfuzz.gpu.targets import GpuTarget, cuda_device_availability, quietly, retain_primary_context
from layoutfuzz.harness.capture import stderr_text
from layoutfuzz.harness.compare import Comparison, compare_values
from layoutfuzz.harness.signatures import compile_error, normalise
from layoutfuzz.harness.target import Availability, Unsupported
from layoutfuzz.harness.triton_compat.lowering import WARP_SHUFFLE
from layoutfuzz.oracles.algorithms import conversion_plan
from layoutfuzz.oracles.linear_layout import LinearLayout

INT_TYPES = {8: "int8", 16: "int16", 32: "int32", 64: "int64"}
# a target whose kernels launch through cuda.core on NumPy's buffers (gpu.device_arrays) needs no torch: its fork server
# is seconds quicker to start without it
PREBUILT_NEEDS = ("triton", "cuda.core")
PREBUILT_PRELOAD = ("numpy", "cuda.core", "cuda.bindings.driver")
POINTERS = {8: "*i8", 16: "*i16", 32: "*i32", 64: "*i64"}  # Triton signature types of the same


class Rejected(Exception):
    """Triton refused to compile a kernel the oracle calls valid."""


@dataclass(frozen=True)
class KernelSpec:
    """What compiling a case's kernel takes: the Gluon function, its pointer types, constexprs, warps."""

    kernel: Any
    signature: dict[str, str]
    constexprs: dict[str, Any]
    num_warps: int
    num_ctas: int = 1


def variant_params(params: Mapping[str, Any], variant: str) -> dict[str, Any]:
    """What a prebuilt kernel of lowering ``variant`` is filed under: the case's params and the variant."""
    return {**params, "lowering": variant} if variant else dict(params)


def _torch_on_device() -> None:
    """Device 0's primary context, then torch's CUDA initialised on it (torch waits for a thread initialising it)."""
    retain_primary_context()
    import torch

    torch.cuda.init()


@cache
def cubin_launcher() -> Any:
    """This process's launcher of compiled kernels (``gpu.prebuilt.CubinLauncher``): its stream takes their buffers."""
    from layoutfuzz.gpu.prebuilt import CubinLauncher

    return CubinLauncher()


def single_threaded_mlir() -> None:
    """Triton's MLIR pass managers run on this process's thread alone (``MLIR_DISABLE_MULTITHREADING``, which Triton
    reads at each run; a value the user set is kept). A campaign already compiles in one process per core, and each
    MLIR context's own pool of a thread per core only oversubscribed them (on an H100 machine's 16 cores, 99 against 119
    kernels a second in a campaign's steady part). The passes give the same LLVM IR and PTX either way
    (``tests/test_direct_ttgir.py``)."""
    os.environ.setdefault("MLIR_DISABLE_MULTITHREADING", "1")


class GluonKernelTarget(GpuTarget):
    """Base of the targets that compile a generated Gluon kernel per case and run it once.

    The kernel is compiled here by this process's Triton into the kernel cache (``gpu.kernel_cache``) and
    launched through cuda.core, or, where ``$LAYOUTFUZZ_KERNELS`` names a folder of prebuilt kernels
    (``layoutfuzz kernels``), taken from there as another Triton compiled it on any machine, with no Triton
    here. Targets whose kernels take tensor descriptors (not ``prebuilt``) launch through Triton's JIT. A compiler failure is an
    answer, not a harness error: ``observed`` returns ``{"rejected": why}`` and ``compare`` calls it a
    divergence. A device fault ends the worker (``on_device``)."""

    needs = ("torch", "triton")
    prebuilt: ClassVar[bool] = False  # whether its kernels can be compiled ahead and run without Triton (kernel_spec)
    variants: ClassVar[tuple[str, ...]] = ("",)  # the lowerings each case runs in ('' is Triton's own)

    def warm_up(self) -> None:
        """Triton's compiler and the probes imported, and this Triton build hashed for the kernel cache and Triton's
        own (0.7 to 1.7 s on an H100 machine): no thread, no CUDA."""
        single_threaded_mlir()
        try:
            import triton.compiler.compiler  # noqa: F401

            from layoutfuzz.gpu import gluon_probes  # noqa: F401
            from layoutfuzz.gpu.kernel_cache import cache_folder
        except ImportError:
            return
        cache_folder()

    def warm_up_worker(self) -> None:
        """The worker's CUDA context, and for kernels launched through Triton's JIT torch's CUDA state too (0.9 s a
        worker on an H100 machine: its device count through NVML, then ``torch._C._cuda_init``), begun on a thread."""
        if self.prebuilt:
            super().warm_up_worker()
            return
        threading.Thread(target=quietly, args=(_torch_on_device,), name="CUDA context", daemon=True).start()

    def availability(self) -> Availability:
        folder = active_folder()
        if folder is None:
            missing = self.compile_support()
            return Availability(False, missing) if missing else super().availability()
        if not self.prebuilt:
            return Availability(False, "its kernels run through Triton's JIT only: none are compiled ahead")
        if not folder.is_dir():
            return Availability(False, f"no prebuilt kernels in {folder}")
        if not (folder / self.name).is_dir():
            return Availability(False, f"no {self.name} kernels in {folder}: compile them with `layoutfuzz kernels`")
        return cuda_device_availability(9, ("cuda.core",))

    def compile_support(self) -> str | None:
        """Why this process's Triton cannot compile the target's kernels (a Gluon operation it lacks), or None."""
        return None

    def versions(self) -> Mapping[str, str]:
        folder = active_folder()
        extra = {"kernels compiled by": f"triton {folder_version(folder)}"} if folder is not None else {}
        return {**super().versions(), **extra}

    def kernel_spec(self, case: Case) -> KernelSpec:
        """The kernel case ``case`` runs (needs Triton)."""
        raise NotImplementedError

    def compile(self, case: Case, variant: str = "") -> CompiledKernel:
        """The case's kernel compiled for sm_90a by this process's Triton, on any machine, in its own
        lowering or the lowering ``variant`` (``harness.triton_compat.lowering``), or the compiler's
        error (as ``rejected``)."""
        import triton

        from layoutfuzz.harness.triton_compat.lowering import recompile

        single_threaded_mlir()
        spec = self.kernel_spec(case)
        written = self.direct_ttgir(case, spec)
        first = _written_compile(spec, written)  # outside the capture: a failed attempt's diagnostics are not the answer
        diagnostics: list[str] = []
        try:
            with stderr_text() as diagnostics:
                compiled = first
                if compiled is None:  # through Gluon's frontend (checking the written TTGIR where there is one)
                    compiled = compile_for_sm90(spec.kernel, spec.signature, spec.constexprs, spec.num_warps, spec.num_ctas)
                    if written is not None:
                        _DIRECT.check(spec.kernel.__name__, written, compiled.asm["ttgir"])
                if variant:
                    compiled = recompile(compiled, variant)
        except Exception as exc:
            return CompiledKernel(getattr(spec.kernel, "__name__", "?"), triton.__version__,
                                  rejected=compile_error(exc, "".join(diagnostics)))
        return from_triton(compiled)

    def direct_ttgir(self, case: Case, spec: KernelSpec | None = None) -> str | None:
        """The case's kernel as TTGIR written without Gluon's frontend (``gpu.direct_ttgir``), where this target has
        such a writer (``spec``: its ``kernel_spec`` where the caller has it); None compiles through Gluon."""
        return None

    def kernel_for(self, case: Case, variant: str = "") -> CompiledKernel | None:
        """The case's kernel in Triton's own lowering or the lowering ``variant``: prebuilt (``$LAYOUTFUZZ_KERNELS``),
        else from the kernel cache (compiled by this Triton on a miss) where the target's kernels take only pointers;
        None where Triton's JIT launches it (or with ``$LAYOUTFUZZ_TRITON_JIT=1``). ``Rejected`` where the compiler
        refused it. Asked before any buffer is made, a new worker's first compile overlaps its CUDA context's
        making (``warm_up_worker``)."""
        folder = active_folder()
        if folder is None and not variant and (not self.prebuilt or through_jit()):
            return None
        if folder is None:
            kernel = cached_kernel(self, case, variant)
        else:
            path = kernel_path(folder, self.name, variant_params(case.params, variant))
            if not path.is_file():
                raise Unsupported(f"no kernel of this case in {folder}: compile it with `layoutfuzz kernels`")
            kernel = CompiledKernel.from_json(path.read_text())
        if kernel.rejected:
            raise Rejected(kernel.rejected)
        return kernel

    def execute(self, case: Case, *buffers: Any, variant: str = "", kernel: CompiledKernel | None = None) -> None:
        """Runs the case's kernel (``kernel``, else ``kernel_for``'s) once on ``buffers`` (its pointer arguments)."""
        kernel = kernel or self.kernel_for(case, variant)
        if kernel is None:
            spec = self.kernel_spec(case)
            clusters = {"num_ctas": spec.num_ctas} if spec.num_ctas > 1 else {}
            self.launch(spec.kernel, *buffers, **spec.constexprs, num_warps=spec.num_warps, **clusters)
            return
        cubin_launcher().launch(kernel, *buffers)

    def observed(self, case: Case) -> Any:
        try:
            return self.on_device(lambda: self.run(case))
        except Rejected as exc:
            return {"rejected": str(exc)}

    def run(self, case: Case) -> Any:
        """Compile and run case ``case`` on the device; what ``expected`` predicts."""
        raise NotImplementedError

    @staticmethod
    def launch(kernel: Any, *args: Any, **kwargs: Any) -> Any:
        """``kernel[(1,)](*args, **kwargs)`` then a synchronize (one cluster of ``num_ctas`` CTAs, where given); returns
        the compiled kernel."""
        import torch

        from layoutfuzz.gpu.device import DeviceFault

        diagnostics: list[str] = []
        try:
            with stderr_text() as diagnostics:
                compiled = kernel[(1,)](*args, **kwargs)
        except Exception as exc:  # compilation happens before the launch: the device is untouched
            raise Rejected(compile_error(exc, "".join(diagnostics))) from exc
        try:
            torch.cuda.synchronize()
        except RuntimeError as exc:
            raise DeviceFault(str(exc)) from exc
        return compiled

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        if isinstance(observed, dict) and "rejected" in observed:
            why = observed["rejected"]
            # the signature without what varies between cases of one cause (numbers: a crash's basis and dim)
            return Comparison(False, 1, (why,), "rejected: " + normalise(why), "Triton rejected a kernel the oracle calls valid")
        return self.compare_results(case, expected, observed)

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """Each output of the probe (``data_mismatches``, ``placement``) is its own root cause: mismatches by field."""
        return compare_values(expected, observed, by_field=True)


_DIRECT = DirectTtgir()  # this process's trust in each probe's written TTGIR


def _written_compile(spec: KernelSpec, written: str | None) -> Any:
    """The kernel compiled from its written TTGIR where that is trusted for its probe (``gpu.direct_ttgir``);
    None where it goes through Gluon: no written TTGIR, not yet or no longer trusted, a check due, or a compile
    that failed (Gluon's own compile then gives the error, with its source locations)."""
    if written is None or not _DIRECT.wanted(spec.kernel.__name__):
        return None
    try:
        return compile_ttgir(written, spec.kernel.__name__, spec.num_warps, spec.num_ctas)
    except Exception:
        return None


def compile_for_sm90(kernel: Any, signature: Mapping[str, str], constexprs: Mapping[str, Any], num_warps: int,
                     num_ctas: int = 1) -> Any:
    """Compile a Gluon kernel for sm_90a without a device, as a launch with 16-byte aligned buffers
    compiles it (pointer arguments marked ``tt.divisibility`` 16, as Triton's JIT marks torch tensors), for a
    cluster of ``num_ctas`` CTAs."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    names = list(getattr(kernel, "arg_names", [])) or [*signature, *constexprs]
    signature = {**signature, **{name: "constexpr" for name in constexprs}}
    signature = {name: signature[name] for name in names if name in signature}
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(signature) if signature[name].startswith("*")}
    return triton.compile(GluonASTSource(kernel, signature, dict(constexprs), attrs), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": num_warps, "num_ctas": num_ctas})


def holders(layout: LinearLayout, shape: list[int]) -> list[int]:
    """For each element (row-major), the thread that stores it, numbered across the cluster (``%tid.x`` plus the
    CTA's rank times its threads): the copy whose broadcast lane, warp and block bits are zero (the right inverse with
    slack variables zero)."""
    names = [n for n, _ in layout.out_dims]
    # the right inverse with its inputs reversed: its packed input is the row-major index (last dim fastest)
    hardware = layout.right_inverse().transpose_ins(names[::-1]).apply_all()
    zeros = np.zeros(prod(shape), dtype=np.int64)
    threads = 32 * dict(layout.in_sizes).get("warp", 1)
    return (hardware.get("lane", zeros) + 32 * hardware.get("warp", zeros) + threads * hardware.get("block", zeros)).tolist()


def gluon_layout(layout: LinearLayout, shape: list[int]):
    from triton.experimental.gluon import language as ttgl

    bases = {n: [list(b) for b in bs] for n, bs in layout.in_dims}
    return ttgl.DistributedLinearLayout(bases.get("register", []), bases.get("lane", []), bases.get("warp", []),
                                        bases.get("block", []), list(shape))


def _permuted(source: Source, layout: LinearLayout, dims: tuple[str, ...]) -> LinearLayout:
    """``layout`` with the bases of ``dims`` shuffled among those dims (sizes kept)."""
    bases = {n: list(bs) for n, bs in layout.in_dims}
    pool = [b for d in dims for b in bases[d]]
    order = permutation(source, len(pool))
    shuffled = [pool[i] for i in order]
    for d in dims:
        count = len(bases[d])
        bases[d], shuffled = shuffled[:count], shuffled[count:]
    return LinearLayout(tuple((n, tuple(bases[n])) for n, _ in layout.in_dims), layout.out_dims)


class TritonConvertLayout(GluonKernelTarget):
    name = "triton.convert_layout"
    layer = "Triton's lowering (convert_layout)"
    description = "Gluon convert_layout between random distributed linear layouts on the GPU: data and holders"
    requires = ("cuda device sm_90", "triton")
    needs = PREBUILT_NEEDS
    preload = PREBUILT_PRELOAD
    prebuilt = True

    def generate(self, source: Source) -> dict[str, Any]:
        rank = source.integer(1, 3)
        total = source.integer(rank, 12)  # from 2 elements (fewer than a warp's lanes: broadcasting) to 2^12
        shape = [1 << (b + 1) for b in split_bits(source, total - rank, rank)]
        outs = [(f"dim{i}", s) for i, s in enumerate(shape)]
        warps = source.integer(0, 5)  # 1-32 warps
        a = distributed_layout(source, outs=outs, fixed_bits={"lane": 5, "warp": warps}, max_broadcast_bits=2)
        how = source.choice(("independent", "registers", "within_warps"))
        if how == "independent":
            b = distributed_layout(source, outs=outs, fixed_bits={"lane": 5, "warp": warps}, max_broadcast_bits=2)
        else:  # B moves data only inside threads, or only inside warps: 5.4's cheaper conversions
            b = _permuted(source, a, ("register",) if how == "registers" else ("register", "lane"))
        return {"shape": shape, "num_warps": 1 << warps, "elem_bits": source.choice(tuple(INT_TYPES)),
                "a": a.to_dict(), "b": b.to_dict()}

    def validate(self, case: Case) -> None:
        """The generator's rules: 1-3 dims of at least 2, at most 2^12 elements, 1-32 warps, 8-64-bit
        elements, and A and B distributed layouts (Def 4.10) over 32 lanes and the kernel's warps."""
        p = case.params
        shape = check_shape(p.get("shape"))
        warps = power_of_two(p.get("num_warps"), "num_warps", 1, 32)
        if not 1 <= len(shape) <= 3 or min(shape) < 2 or not prod(shape).bit_length() - 1 <= 12:
            raise ValueError("1-3 dims of at least 2, at most 2^12 elements")
        if p.get("elem_bits") not in INT_TYPES:
            raise ValueError(f"elem_bits must be one of {sorted(INT_TYPES)}")
        for key in ("a", "b"):
            layout = LinearLayout.from_dict(p[key])
            if [s for _, s in layout.out_dims] != list(shape) or not layout.is_surjective():
                raise ValueError(f"layout {key} does not cover the shape {p['shape']}")
            check_layout_kind(layout, "distributed")
            sizes = dict(layout.in_sizes)
            if sizes.get("lane") != 32 or sizes.get("warp") != warps:
                raise ValueError(f"layout {key} must span 32 lanes and the kernel's {warps} warps")

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """A dim halved in A and B at once, fewer warps in both, a register basis dropped, a narrower element."""
        p = case.params
        for a, b in joint_out_dim_halvings([p["a"], p["b"]]):
            yield replaced(p, a=a, b=b, shape=[s for _, s in a["out_dims"]])
        warps = dict(LinearLayout.from_dict(p["a"]).in_sizes).get("warp", 1)
        for i in reversed(range(warps.bit_length() - 1)):
            yield replaced(p, a=drop_basis(p["a"], "warp", i), b=drop_basis(p["b"], "warp", i), num_warps=p["num_warps"] // 2)
        for key in ("a", "b"):
            registers = len(dict(LinearLayout.from_dict(p[key]).in_dims).get("register", ()))
            for i in reversed(range(registers)):
                yield replaced(p, **{key: drop_basis(p[key], "register", i)})
        if p["elem_bits"] > 8:
            yield replaced(p, elem_bits=p["elem_bits"] // 2)

    def family(self, case: Case) -> str:
        p = case.params
        try:
            kind = conversion_plan(LinearLayout.from_dict(p["a"]), LinearLayout.from_dict(p["b"])).kind
        except Exception:
            kind = "?"
        return f"{kind}:{p.get('elem_bits', '?')}b"

    def parameter_space(self) -> Space:
        from layoutfuzz.gpu.spaces import convert_layout_space

        return convert_layout_space()

    def expected(self, case: Case) -> Any:
        p = case.params
        return {
            "data_mismatches": 0,
            "holders_a": holders(LinearLayout.from_dict(p["a"]), p["shape"]),
            "holders_b": holders(LinearLayout.from_dict(p["b"]), p["shape"]),
        }

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """Which of the conversion's promises broke, whatever the side or element: a wrong holder
        (the layout), wrong data (the values moved), or both."""
        verdict = super().compare_results(case, expected, observed)
        if verdict.ok:
            return verdict
        kinds = [k for k, broken in (("wrong holder", expected["holders_a"] != observed.get("holders_a")
                                      or expected["holders_b"] != observed.get("holders_b")),
                                     ("wrong data", observed.get("data_mismatches", 0) != 0)) if broken]
        return Comparison(False, verdict.mismatch_count, verdict.mismatches, ", ".join(kinds) or verdict.signature, verdict.note)

    def run(self, case: Case, variant: str = "") -> Any:
        p = case.params
        dtype = np.dtype(INT_TYPES[p["elem_bits"]])
        numel = prod(p["shape"])
        info = np.iinfo(dtype)
        values = np.random.default_rng(case.index).integers(info.min, info.max, numel, dtype=dtype)  # the data follows the index
        kernel = self.kernel_for(case, variant)
        stream = cubin_launcher().stream
        src = device_input(values, "src", stream)
        outputs = [device_output(np.zeros(numel, dtype), "dst", stream),
                   *(device_output(np.full(numel, -1, np.int32), name, stream) for name in ("tid_a", "tid_b"))]
        self.execute(case, src, *outputs, variant=variant, kernel=kernel)
        dst, tid_a, tid_b = (g.read(stream) for g in outputs)
        return {"data_mismatches": int((dst != values).sum()), "holders_a": tid_a.tolist(), "holders_b": tid_b.tolist()}

    def direct_ttgir(self, case: Case, spec: KernelSpec | None = None) -> str | None:
        p = case.params
        return convert_probe_ttgir(list(p["shape"]), p["elem_bits"], LinearLayout.from_dict(p["a"]),
                                   LinearLayout.from_dict(p["b"]), p["num_warps"], p.get("num_ctas", 1))

    def kernel_spec(self, case: Case) -> KernelSpec:
        from layoutfuzz.gpu.gluon_probes import CONVERT_PROBES

        p = case.params
        shape = list(p["shape"])
        pointer = POINTERS[p["elem_bits"]]
        constexprs = {"A": gluon_layout(LinearLayout.from_dict(p["a"]), shape), "B": gluon_layout(LinearLayout.from_dict(p["b"]), shape),
                      **{f"S{i}": s for i, s in enumerate(shape)}}
        return KernelSpec(CONVERT_PROBES[len(shape)], {"src": pointer, "dst": pointer, "tid_a": "*i32", "tid_b": "*i32"},
                          constexprs, p["num_warps"])


class TritonSharedMemory(GluonKernelTarget):
    name = "triton.shared_memory"
    layer = "Triton's lowering (shared-memory stores and loads)"
    description = "Gluon shared-memory round trips on the GPU: data, and the raw placement vs the memory-layout oracle"
    requires = ("cuda device sm_90", "triton")
    needs = PREBUILT_NEEDS
    preload = PREBUILT_PRELOAD
    prebuilt = True

    def parameter_space(self) -> Space:
        """Every parameter this target draws with its legal range (layoutfuzz.gpu.spaces)."""
        from layoutfuzz.gpu.spaces import shared_memory_space

        return shared_memory_space()

    def generate(self, source: Source) -> dict[str, Any]:
        from layoutfuzz.generators import legacy_layouts
        from layoutfuzz.generators.layouts import memory_layout
        from layoutfuzz.oracles import triton_layouts as tl

        kind = source.choice(("swizzled_shared", "nvmma_shared", "linear"))
        elem_bits = source.choice((8, 16, 32) if kind == "nvmma_shared" else (8, 16, 32, 64))
        # element ids must fit the element type exactly: at most 2^8 elements of 8 bits
        shape = legacy_layouts.shape(source, 2, min_log2=3, max_total_log2=min(12, elem_bits), max_dim_log2=8)
        outs = [(f"dim{i}", s) for i, s in enumerate(shape)]
        warps = source.integer(0, 5)  # 1-32 warps
        a = distributed_layout(source, outs=outs, fixed_bits={"lane": 5, "warp": warps}, max_broadcast_bits=2)
        b = distributed_layout(source, outs=outs, fixed_bits={"lane": 5, "warp": warps}, max_broadcast_bits=2)
        params = {"kind": kind, "shape": shape, "num_warps": 1 << warps, "elem_bits": elem_bits, "a": a.to_dict(), "b": b.to_dict()}
        if kind == "linear":
            params["offset_bases"] = [list(x) for x in dict(memory_layout(source, "offset", outs=outs).in_dims)["offset"]]
        else:
            layout, _, _ = legacy_layouts.shared(source, kind, elem_bits, rank=2, tensor_shape=shape)
            params["shared"] = tl.to_dict(layout)
        return params

    def family(self, case: Case) -> str:
        return f"{case.params.get('kind', '?')}:{case.params.get('elem_bits', '?')}b"

    def shared_layout(self, p: Mapping[str, Any]) -> LinearLayout:
        """The oracle's memory layout: offset -> element."""
        from layoutfuzz.harness.triton_compat.layouts import shared_layout
        from layoutfuzz.oracles import triton_layouts as tl

        outs = [(f"dim{i}", s) for i, s in enumerate(p["shape"])]
        if "offset_bases" in p:
            return LinearLayout.from_bases({"offset": p["offset_bases"]}, outs)
        layout = shared_layout(tl.from_dict(p["shared"]), p["shape"])
        return layout.sublayout(["offset"], [n for n, _ in outs])

    def validate(self, case: Case) -> None:
        if not self.shared_layout(case.params).is_invertible():
            raise ValueError("the shared layout is not a memory layout (Def 4.14)")

    def expected(self, case: Case) -> Any:
        """Data intact, and raw shared offset o holding element S(o) (row-major index)."""
        p = case.params
        where = self.shared_layout(p).apply_all()  # per offset, its element's coordinates
        return {"data_mismatches": 0, "placement": (where["dim0"] * p["shape"][1] + where["dim1"]).tolist()}

    def kernel_spec(self, case: Case) -> KernelSpec:
        from triton.experimental.gluon import language as ttgl

        from layoutfuzz.gpu.gluon_probes import shared_probe_2d
        from layoutfuzz.harness.targets.gluon import shared_linear, to_gluon
        from layoutfuzz.oracles import triton_layouts as tl

        p = case.params
        s0, s1 = p["shape"]
        shared = shared_linear(p["offset_bases"]) if "offset_bases" in p else to_gluon(tl.from_dict(p["shared"]))
        constexprs = {"A": gluon_layout(LinearLayout.from_dict(p["a"]), p["shape"]), "B": gluon_layout(LinearLayout.from_dict(p["b"]), p["shape"]),
                      "S": shared, "F": ttgl.BlockedLayout([1], [32], [p["num_warps"]], [0]), "S0": s0, "S1": s1}
        pointer = POINTERS[p["elem_bits"]]
        return KernelSpec(shared_probe_2d, {"src": pointer, "dst": pointer, "raw": pointer}, constexprs, p["num_warps"])

    def direct_ttgir(self, case: Case, spec: KernelSpec | None = None) -> str | None:
        from layoutfuzz.gpu.direct_ttgir import shared_attr, shared_probe_ttgir

        p = case.params
        spec = spec or self.kernel_spec(case)  # compile() has built it already
        return shared_probe_ttgir(list(p["shape"]), p["elem_bits"], LinearLayout.from_dict(p["a"]), LinearLayout.from_dict(p["b"]),
                                  shared_attr(spec.constexprs["S"]), p["num_warps"])

    def run(self, case: Case) -> Any:
        p = case.params
        s0, s1 = p["shape"]
        numel = s0 * s1
        dtype = np.dtype(INT_TYPES[p["elem_bits"]])
        ids = np.arange(numel, dtype=np.int64).astype(dtype)  # element ids (mod 2^bits)
        kernel = self.kernel_for(case)
        stream = cubin_launcher().stream
        src = device_input(ids, "src", stream)
        dst, raw = device_output(np.zeros(numel, dtype), "dst", stream), device_output(np.zeros(numel, dtype), "raw", stream)
        self.execute(case, src, dst, raw, kernel=kernel)
        dst, raw = dst.read(stream), raw.read(stream)
        placement = raw.view(f"uint{p['elem_bits']}").tolist()  # ids, unsigned: exact, as numel <= 2^bits
        return {"data_mismatches": int((dst != ids).sum()), "placement": placement}


class TritonConvertLayoutShuffle(TritonConvertLayout):
    """Within-warp conversions lowered twice: Triton's own choice and the forced warp-shuffle lowering
    (3.9.0 on), each against the oracle and the two against each other."""

    name = "triton.convert_layout_shuffle"
    layer = "Triton's lowering (convert_layout, forced warp shuffle)"
    description = "within-warp convert_layouts in Triton's lowering and the forced warp-shuffle one (3.9): each vs the oracle, and vs each other"
    variants = ("", WARP_SHUFFLE)

    def generate(self, source: Source) -> dict[str, Any]:
        """A conversion that moves data only inside warps (5.4's shuffle plan), the rest as the parent's."""
        for _ in range(64):
            params = super().generate(source)
            if _within_warps(params):
                return params
        return params  # rare: validate refuses it, and the runner records why

    def parameter_space(self) -> Space:
        """The convert_layout space, its plan the shuffle one by definition (triton.convert_layout draws the others)."""
        space = super().parameter_space()
        other_plan = "triton.convert_layout draws it: this target is the within-warp (shuffle) plan by definition"
        no_copies = ("5.4's shuffle plan needs the conversion to map each warp to itself; warps that hold copies map "
                     "to no warp (cvt(warp) = 0), so their conversions go through shared memory")
        excluded = {"conversion plan": {v: other_plan for v in ("none", "register", "shared")},
                    "A broadcasts warps": {"yes": no_copies}}
        return Space(tuple(Parameter(p.name, p.values, p.source, p.draw, {**p.excluded, **excluded[p.name]})
                           if p.name in excluded else p for p in space.parameters), space.illegal)

    def validate(self, case: Case) -> None:
        super().validate(case)
        if not _within_warps(case.params):
            raise ValueError("the conversion must stay inside each warp (5.4's shuffle plan) for a warp-shuffle lowering")

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        for params in super().shrink(case):
            if _within_warps(params):
                yield params

    def availability(self) -> Availability:
        from layoutfuzz.harness.triton_compat.lowering import supports

        found = super().availability()
        if not found.available:
            return found
        try:
            if not supports(WARP_SHUFFLE):
                return Availability(False, "this Triton has no forced warp-shuffle lowering of convert_layout (3.9.0 on)")
        except ImportError as exc:
            return Availability(False, f"needs Triton: {exc}")
        return found

    def expected(self, case: Case) -> Any:
        one = super().expected(case)
        return {variant or "triton": one for variant in self.variants}

    def run(self, case: Case, variant: str = "") -> Any:
        return {v or "triton": super(TritonConvertLayoutShuffle, self).run(case, v) for v in self.variants}

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """Each lowering against the oracle (its broken promises named after it), then the two against
        each other (data and holders)."""
        broken, count, lines = [], 0, []
        for side in expected:
            verdict = super().compare_results(case, expected[side], observed[side])
            if not verdict.ok:
                broken.append(f"{side}: {verdict.signature}")
                count += verdict.mismatch_count
                lines += [f"{side}: {m}" for m in verdict.mismatches[:4]]
        if broken:
            return Comparison(False, count, tuple(lines), "; ".join(broken), "a lowering disagrees with the oracle")
        first, second = observed.values()
        if first != second:
            return Comparison(False, 1, ("the two lowerings store different holders or data",), "the lowerings differ")
        return Comparison(True)


def _within_warps(params: Mapping[str, Any]) -> bool:
    try:
        kind = conversion_plan(LinearLayout.from_dict(params["a"]), LinearLayout.from_dict(params["b"])).kind
    except Exception:
        return False
    return kind == "shuffle"
