"""GPU target ``triton.tma``: Gluon TMA loads and stores through NVMMA-shared buffers, checked
byte for byte against the 5.5.7 oracle (``oracles.tma``), and the same boxes through the raw
``tma.swizzle`` driver."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from math import prod
from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.legacy_space import WARPS
from layoutfuzz.generators.shrink import replaced
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.gpu.targets.gluon_kernel import GluonKernelTarget, KernelSpec, cubin_launcher
from layoutfuzz.gpu.targets.tma_swizzle import compare_windows
from layoutfuzz.gpu.tensor_descriptors import encoded_maps
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Attribution
from layoutfuzz.oracles.tma import block_boxes

INT_TYPES = {8: "int8", 16: "int16", 32: "int32"}
GRANULE_EVIDENCE = ("replayed one layer down in the same case: the raw TMA store (gpu/kernels/tma_copy.cu, cuda.core and "
                    "cuTensorMapEncodeTiled, no Triton) of the same box writes the same 16-byte granule past the bound; "
                    "Triton issue #11583 and docs PR #11893 describe it as the hardware's")
TRAP_EVIDENCE = ("a raw TMA store at a negative coordinate, and a raw copy at a misaligned innermost coordinate, trap an H100 "
                 "the same way (CUDA_ERROR_ILLEGAL_INSTRUCTION) without Triton; PTX states neither")
SENTINEL = 0x5A  # global bytes the TMA store must leave alone
MAX_BLOCK_BYTES = 16 * 1024


def _rng(case: Case, stream: int) -> np.random.Generator:
    return np.random.default_rng([case.seed, case.index, stream])


def padded_shape(p: Mapping[str, Any]) -> list[int]:
    """The global tensor as allocated: the innermost dim widened by ``row_pad`` (its row stride)."""
    return [*p["global_shape"][:-1], p["global_shape"][-1] + p["row_pad"]]


def first_box(p: Mapping[str, Any]):
    """The first of the tiled boxes the block is copied in (all share its swizzle and dims)."""
    (_, box), *_ = block_boxes(p["block"], p["elem_bits"] // 8, p["swizzle"])
    return box


@cache
def _store_runner():
    from layoutfuzz.gpu.tma_driver import TmaStoreRunner

    return TmaStoreRunner()


def raw_store_past_bound(p: Mapping[str, Any]) -> bool | None:
    """Whether the raw TMA store (no Triton) of the block's box that reaches the innermost bound
    writes past that bound; None where no box reaches an unaligned bound, or a coordinate is
    negative (a store there traps: a finding of its own)."""
    from layoutfuzz.oracles.tensor_map import TiledEncoding
    from layoutfuzz.oracles.tma_windows import DTYPE_BY_BYTES

    e = p["elem_bits"] // 8
    shape, coord, pitch = p["global_shape"], p["coord"], padded_shape(p)
    if min(coord) < 0 or shape[-1] * e % 16 == 0:
        return None
    bound = shape[-1]
    straddling = [(c, b) for c, b in block_boxes(p["block"], e, p["swizzle"]) if coord[-1] + c < bound < coord[-1] + c + b.box_dims[0]]
    if not straddling:  # no box holds the bound: nothing written past it to compare
        return None
    column, box = straddling[0]
    strides, stride = [], pitch[-1] * e
    for d in reversed(shape[:-1]):
        strides.append(stride)
        stride *= d
    params = TiledEncoding(DTYPE_BY_BYTES[e], 0, tuple(reversed(shape)), tuple(strides), tuple(box.box_dims),
                           tuple(box.element_strides), swizzle=box.swizzle.spec.cuda)
    out = _store_runner().store(params, (coord[-1] + column, *reversed(coord[:-1])), SENTINEL).view(f"<u{e}")
    past = out.reshape(-1, pitch[-1])[:, shape[-1]:]
    return bool((past != int.from_bytes(bytes([SENTINEL]) * e, "little")).any())


def block_data(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """The global tensor's bytes (rows padded to the stride) and the bytes written for the store."""
    p = case.params
    e = p["elem_bits"] // 8
    source = _rng(case, 0).integers(0, 256, prod(padded_shape(p)) * e, dtype=np.uint8)
    fill = _rng(case, 1).integers(0, 256, prod(p["block"]) * e, dtype=np.uint8)
    return source, fill


def placement(p: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """For each element of the shared buffer (by byte address / element size), the global flat
    element index it holds (in the padded tensor) and whether that coordinate is in bounds."""
    e = p["elem_bits"] // 8
    shape, coord = p["global_shape"], p["coord"]
    pitch = padded_shape(p)
    count = prod(p["block"])
    flat = np.zeros(count, dtype=np.int64)
    inside = np.zeros(count, dtype=bool)
    for column, box in block_boxes(p["block"], e, p["swizzle"]):
        for index in box.indices():  # innermost first
            at = [c + i for c, i in zip(coord, reversed(index))]
            at[-1] += column
            slot = box.address(index) // e
            inside[slot] = all(0 <= x < n for x, n in zip(at, shape))
            flat[slot] = np.ravel_multi_index(at, pitch) if inside[slot] else 0
    return flat, inside


class TritonTma(GluonKernelTarget):
    name = "triton.tma"
    layer = "Triton's TMA lowering and descriptor encoding"
    description = "Gluon TMA load/store through NVMMA-shared buffers on the GPU vs the 5.5.7 oracle and the raw driver"
    requires = ("cuda device sm_90", "triton", "torch", "cuda.core")
    needs = ("torch", "triton", "cuda.core")
    prebuilt = True  # its kernel takes tensor descriptors, rebuilt without Triton (gpu.tensor_descriptors)

    def parameter_space(self) -> Space:
        """Every parameter this target draws with its legal range."""
        return triton_tma_space()

    def generate(self, source: Source) -> dict[str, Any]:
        elem_bits = source.choice((8, 16, 32))
        e = elem_bits // 8
        swizzle = source.choice((0, 32, 64, 128))
        rank = source.integer(2, 3)
        # innermost dim: at least the swizzle span (Triton aborts below it), at least 16 bytes
        least = max(16, swizzle) // e
        inner = least << source.integer(0, (256 // least).bit_length() - 1)  # up to 256 elements (boxDim <= 256)
        budget = (MAX_BLOCK_BYTES // (inner * e)).bit_length() - 1  # log2 of rows that fit
        rows_log2 = source.integer(3 if swizzle else 0, max(3 if swizzle else 0, min(budget, 8)))
        outer = [0] * (rank - 1)
        for _ in range(rows_log2):
            open_dims = [d for d in range(rank - 1) if outer[d] < 8]
            outer[source.choice(open_dims)] += 1
        block = [1 << b for b in outer] + [inner]
        global_shape, coord = [], []
        for d, b in enumerate(block):
            n = max(1, b * source.integer(1, 3) + source.integer(-b // 2, b // 2))
            global_shape.append(n)
            # a quarter of the boxes hang over an edge (zero fill on loads, skipped on stores)
            lo, hi = (-b // 2, n - 1) if source.integer(0, 3) == 0 else (0, max(0, n - b))
            unit = 16 // e if d == len(block) - 1 else 1  # the innermost coordinate is 16-byte aligned
            coord.append(unit * source.integer(-(-lo // unit), hi // unit))
        row_pad = (16 // e) * source.integer(0, 2) + (-global_shape[-1]) % (16 // e)  # strides: multiples of 16 bytes
        return {"elem_bits": elem_bits, "swizzle": swizzle, "block": block, "global_shape": global_shape,
                "coord": coord, "row_pad": row_pad, "num_warps": 1 << source.integer(0, 5)}

    def validate(self, case: Case) -> None:
        """The generator's rules: 8-32-bit elements, a swizzle of 0-128 bytes, rank 2 or 3 throughout,
        power-of-two block dims, boxes hanging at most half a block over an edge, 1-32 warps."""
        p = case.params
        if p.get("elem_bits") not in INT_TYPES or p.get("swizzle") not in (0, 32, 64, 128):
            raise ValueError("elem_bits must be 8/16/32 and swizzle 0/32/64/128")
        e = p["elem_bits"] // 8
        block, shape, coord = p.get("block"), p.get("global_shape"), p.get("coord")
        if not all(isinstance(x, list) for x in (block, shape, coord)) or not len(block) == len(shape) == len(coord) in (2, 3):
            raise ValueError("block, global_shape and coord have the same rank, 2 or 3")
        if p.get("num_warps") not in (1, 2, 4, 8, 16, 32) or not isinstance(p.get("row_pad"), int) or p["row_pad"] < 0:
            raise ValueError("num_warps is 1-32 (a power of two), and row_pad a non-negative integer")
        if any(n < 1 for n in shape) or any(not -b // 2 <= c <= n - 1 for c, b, n in zip(coord, block, shape)):
            raise ValueError("each coordinate lies in its dim or at most half a block before it")
        if any(b & (b - 1) or not 1 <= b <= 256 for b in p["block"]) or prod(p["block"]) * e > MAX_BLOCK_BYTES:
            raise ValueError(f"block {p['block']}: powers of two up to 256, at most {MAX_BLOCK_BYTES} bytes")
        if p["block"][-1] * e < max(16, p["swizzle"]):
            raise ValueError("the innermost block dim is narrower than 16 bytes or the swizzle span")
        if (padded_shape(p)[-1] * e) % 16:
            raise ValueError("the row stride is not a multiple of 16 bytes")
        if (p["coord"][-1] * e) % 16:  # Triton's TMA tutorial; the H100 traps (illegal instruction) otherwise
            raise ValueError("the innermost coordinate is not 16-byte aligned")

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """The outermost dim dropped, a block or tensor dim halved, a coordinate moved to 0, less row
        padding, fewer warps, a narrower swizzle; ``validate`` keeps the generator's rules."""
        p = case.params
        block, shape, coord = list(p["block"]), list(p["global_shape"]), list(p["coord"])
        if len(block) > 2:
            yield replaced(p, block=block[1:], global_shape=shape[1:], coord=coord[1:])
        for d in range(len(block)):
            if block[d] > 1:
                yield replaced(p, block=block[:d] + [block[d] // 2] + block[d + 1:])
            if shape[d] > 1:
                yield replaced(p, global_shape=shape[:d] + [shape[d] // 2] + shape[d + 1:])
            if coord[d]:
                yield replaced(p, coord=coord[:d] + [0] + coord[d + 1:])
        unit = 16 // (p["elem_bits"] // 8)
        if p["row_pad"] >= unit:
            yield replaced(p, row_pad=p["row_pad"] - unit)
        if p["num_warps"] > 1:
            yield replaced(p, num_warps=p["num_warps"] // 2)
        if p["swizzle"]:
            yield replaced(p, swizzle=p["swizzle"] // 2 if p["swizzle"] > 32 else 0)

    def family(self, case: Case) -> str:
        p = case.params
        return f"{p.get('swizzle', '?')}B:{p.get('elem_bits', '?')}b"

    def tensor_maps(self, p: Mapping[str, Any]) -> list[dict[str, Any]]:
        """What Triton should encode: the swizzle mode and the box of each TMA copy."""
        box = first_box(p)
        one = {"swizzle": box.swizzle.spec.cuda, "block_size": [*p["block"][:-1], box.box_dims[0]]}
        return [one, one]

    def expected(self, case: Case) -> Any:
        p = case.params
        e = p["elem_bits"] // 8
        source, fill = block_data(case)
        flat, inside = placement(p)
        unit = f"<u{e}"
        loaded = np.where(inside, source.view(unit)[flat], 0).astype(unit)
        stored = np.full(source.size, SENTINEL, dtype=np.uint8).view(unit)
        stored[flat[inside]] = fill.view(unit)[inside]
        return {"tensor_maps": self.tensor_maps(p), "load": loaded.tobytes().hex(), "store": stored.tobytes().hex(),
                "driver_bytes_wrong": 0}

    def kernel_spec(self, case: Case) -> KernelSpec:
        """``tma_probe`` over descriptors of the block in the case's NVMMA layout (the tensor and the stored one), the
        loaded block's dump and the stored bytes as pointers; a flat layout of the case's warps."""
        from triton.experimental.gluon import language as ttgl

        from layoutfuzz.gpu.direct_ttgir import INT_NAMES
        from layoutfuzz.gpu.gluon_probes import tma_probe

        p = case.params
        ty = INT_NAMES[p["elem_bits"]]
        layout = ttgl.NVMMASharedLayout(p["swizzle"], p["elem_bits"], len(p["block"]))
        desc = f"tensordesc<{ty}[{', '.join(map(str, p['block']))}],{layout!r}>"
        constexprs = {"COORD": tuple(p["coord"]), "N": prod(p["block"]), "F": ttgl.BlockedLayout([1], [32], [p["num_warps"]], [0])}
        return KernelSpec(tma_probe, {"in_desc": desc, "out_desc": desc, "raw": "*" + ty, "fill": "*" + ty}, constexprs,
                          p["num_warps"])

    def run(self, case: Case) -> dict[str, Any]:
        """The probe's load and store (the kernel compiled ahead or cached, launched through cuda.core on NumPy's
        buffers between guard zones; Triton's JIT on torch's with ``$LAYOUTFUZZ_TRITON_JIT=1``), then the same first
        box through the raw driver and the raw store past the bound."""
        from layoutfuzz.gpu.targets.tma_swizzle import WINDOW, _tma_runner
        from layoutfuzz.oracles.tma_windows import expected_window

        p = case.params
        kernel = self.kernel_for(case)
        maps, load, store = self._run_jit(case) if kernel is None else self._run_kernel(case, kernel)
        # the same first box through the raw driver (gpu/kernels/tma_copy.cu), against its oracle
        box = first_box(p)
        (window,) = _tma_runner().run([box], WINDOW)
        wrong = -1 if isinstance(window, str) else int((window != expected_window(box, WINDOW)).sum())
        return {"tensor_maps": maps, "load": load.hex(), "store": store.hex(), "driver_bytes_wrong": wrong,
                "raw_store_past_bound": raw_store_past_bound(p)}

    def _run_kernel(self, case: Case, kernel: Any) -> tuple[list[dict[str, Any]], bytes, bytes]:
        from layoutfuzz.gpu.device_arrays import device_input, device_output
        from layoutfuzz.gpu.tensor_descriptors import HostTensorDescriptor

        p = case.params
        kind = INT_TYPES[p["elem_bits"]]
        source, fill = block_data(case)
        stream = cubin_launcher().stream
        src = device_input(source.view(kind).reshape(padded_shape(p)), "the loaded tensor", stream)
        dst = device_output(np.full(source.size, SENTINEL, np.uint8).view(kind).reshape(padded_shape(p)), "the stored tensor", stream)
        raw = device_output(np.zeros(prod(p["block"]), kind), "the loaded block", stream)
        fill_d = device_input(fill.view(kind), "the stored block", stream)
        strides = tuple(int(x) // src.dtype.itemsize for x in np.empty(padded_shape(p), kind).strides)
        shape = tuple(p["global_shape"])
        self.execute(case, HostTensorDescriptor(src, shape, strides), HostTensorDescriptor(dst, shape, strides), raw, fill_d,
                     kernel=kernel)
        return encoded_maps(kernel.tensor_maps), raw.read(stream).tobytes(), dst.read(stream).tobytes()

    def _run_jit(self, case: Case) -> tuple[list[dict[str, Any]], bytes, bytes]:
        import torch
        from triton.experimental.gluon import language as ttgl
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

        p = case.params
        dtype = getattr(torch, INT_TYPES[p["elem_bits"]])
        source, fill = block_data(case)
        src = torch.from_numpy(source).view(dtype).reshape(padded_shape(p)).cuda()
        dst = torch.full_like(src.view(torch.uint8), SENTINEL).view(dtype)
        fill_t = torch.from_numpy(fill).view(dtype).cuda()
        raw = torch.zeros(prod(p["block"]), dtype=dtype, device="cuda")
        layout = ttgl.NVMMASharedLayout(p["swizzle"], p["elem_bits"], len(p["block"]))
        shape, strides = list(p["global_shape"]), list(src.stride())
        in_desc = TensorDescriptor(src, shape, strides, list(p["block"]), layout)
        out_desc = TensorDescriptor(dst, shape, strides, list(p["block"]), layout)
        spec = self.kernel_spec(case)
        compiled = self.launch(spec.kernel, in_desc, out_desc, raw, fill_t, **spec.constexprs, num_warps=spec.num_warps)
        return (encoded_maps(compiled.metadata.tensordesc_meta), raw.cpu().view(torch.uint8).numpy().tobytes(),
                dst.cpu().view(torch.uint8).numpy().tobytes())

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """The tensor maps, then the load and the store byte for byte; a store that only wrote the
        granule past the innermost bound is told apart by what the raw TMA store (no Triton) did on
        the same box: ``store:granule-past-inner-bound`` when it did the same, else ``..., Triton only``."""
        if observed["tensor_maps"] != expected["tensor_maps"]:
            return Comparison(False, 1, (f"tensor maps: expected {expected['tensor_maps']} got {observed['tensor_maps']}",),
                              "tensor-map", "Triton encoded another swizzle or box than the NVMMA layout implies")
        for part in ("load", "store"):
            verdict = compare_windows(bytes.fromhex(expected[part]), bytes.fromhex(observed[part]), 0 if part == "load" else SENTINEL)
            if not verdict.ok:
                where = "granule-past-inner-bound" if part == "store" and self.only_past_bound(case.params, expected, observed) else verdict.signature
                if where == "granule-past-inner-bound" and observed.get("raw_store_past_bound") is not True:
                    where += ", Triton only" if observed.get("raw_store_past_bound") is False else ", not replayed"
                return Comparison(False, verdict.mismatch_count, verdict.mismatches, f"{part}:{where}",
                                  f"TMA {part}: {verdict.note}" + (" (all in the 16-byte granule past the innermost bound)" if where == "granule-past-inner-bound" else ""))
        if observed["driver_bytes_wrong"] != 0:
            return Comparison(False, 1, (f"raw driver: {observed['driver_bytes_wrong']} bytes wrong",), "driver",
                              "the raw tma.swizzle driver disagrees with the oracle on this box")
        return Comparison(True)

    def attribute(self, outcome: str, signature: str) -> Attribution | None:
        """The two TMA behaviours that replay without Triton are the hardware's."""
        if outcome == "diverge" and signature == "store:granule-past-inner-bound":
            return Attribution("hardware", "the TMA unit (tiled store)", GRANULE_EVIDENCE)
        if outcome == "crash" and "illegal instruction" in signature.lower():
            return Attribution("hardware", "the TMA unit (negative or misaligned coordinates)", TRAP_EVIDENCE)
        if signature == "driver":
            return Attribution("hardware", "the TMA unit (raw load)", "the raw tma.swizzle driver disagrees on the same box")
        return None

    @staticmethod
    def only_past_bound(p: Mapping[str, Any], expected: Mapping[str, Any], observed: Mapping[str, Any]) -> bool:
        """Whether every wrongly stored element lies past the innermost bound but inside the
        16-byte granule that holds the bound (a store writing whole granules)."""
        e = p["elem_bits"] // 8
        want = np.frombuffer(bytes.fromhex(expected["store"]), f"<u{e}")
        got = np.frombuffer(bytes.fromhex(observed["store"]), f"<u{e}")
        inner = np.flatnonzero(want != got) % padded_shape(p)[-1]
        bound = p["global_shape"][-1]
        return bool(inner.size) and bool(np.all((inner >= bound) & (inner < -(-bound * e // 16) * 16 // e)))

    def picture(self, report: dict[str, Any]) -> Any:
        """The first CTA's box in shared memory (which 16 bytes of its row each cell holds) beside the global tensor's wrong
        cells in red; None for a case of no block."""
        if not report["case"]["params"].get("block"):
            return None
        from layoutfuzz.reports.pictures import CELL, cells, mismatched_cells, pyplot

        plt = pyplot()
        p = report["case"]["params"]
        e = p["elem_bits"] // 8
        fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
        box = first_box(p)
        lines = min(16, max(1, box.footprint_bytes // 128))
        labels = np.zeros((lines, 8), dtype=int)  # which 16-byte chunk of its row each shared-memory cell holds
        for index in box.indices():
            address = box.address(index)
            if address // 128 < lines and index[0] * e % CELL == 0:
                labels[address // 128, (address % 128) // CELL] = index[0] * e // CELL
        cells(left, labels, np.zeros_like(labels, dtype=bool), f"shared memory ({p['swizzle']}B swizzle): which 16 B of its row each cell holds",
               "16-byte cell within the 128-byte line", "128-byte line", labels)
        row_bytes = padded_shape(p)[-1] * e
        rows = min(64, prod(p["global_shape"][:-1]))
        per_row = -(-row_bytes // CELL)
        bad = np.zeros((rows, per_row), dtype=bool)
        for address in mismatched_cells(report.get("first_mismatches", [])):
            for byte in range(address, address + CELL):  # the global tensor's 16-byte cells a mismatch touches
                if byte // row_bytes < rows:
                    bad[byte // row_bytes, (byte % row_bytes) // CELL] = True
        bound = p["global_shape"][-1] * e / CELL - 0.5
        cells(right, np.zeros_like(bad, dtype=int), bad, f"global tensor ({rows} rows shown): wrong cells in red (the first 8 reported)",
               "16-byte cell of the row (row stride included)", "row (outer dims flattened)")
        right.axvline(bound, color="blue", linewidth=1)
        right.text(bound, -0.8, " innermost bound", color="blue", fontsize=7)
        return fig


def triton_tma_space() -> Space:
    """``triton.tma``: a Gluon TMA load and store of one box through an NVMMA-shared buffer."""
    gluon = "Gluon: TensorDescriptor and tma.async_copy_global_to_shared / shared_to_global over NVMMAShared"
    api = "CUDA driver API: cuTensorMapEncodeTiled"

    def over_edge(p: Mapping[str, Any]) -> str:
        hangs = any(c < 0 or c + b > n for c, b, n in zip(p["coord"], p["block"], p["global_shape"]))
        return "yes" if hangs else "no"

    def illegal(a: str, x: Any, b: str, y: Any) -> bool:
        pair = {a: x, b: y}
        if "inner box bytes" in pair and "swizzle" in pair:  # the inner row spans at least the swizzle (and 16 bytes)
            return pair["inner box bytes"] < max(16, pair["swizzle"])
        if "inner box bytes" in pair and "element bits" in pair:  # at most 256 elements a row
            return pair["inner box bytes"] > 256 * pair["element bits"] // 8
        if "box rows (log2)" in pair and "swizzle" in pair:  # a swizzled box holds the 8-row atom, in 16 KiB
            return (pair["swizzle"] > 0 and pair["box rows (log2)"] < 3) or max(16, pair["swizzle"]) << pair["box rows (log2)"] > 16384
        if "box rows (log2)" in pair and "inner box bytes" in pair:  # this target's boxes: at most 16 KiB
            return pair["inner box bytes"] << pair["box rows (log2)"] > 16384
        return False

    return Space((
        Parameter("element bits", (8, 16, 32), f"{gluon}: NVMMASharedLayout element_bitwidth 8-32", lambda p: p["elem_bits"]),
        Parameter("swizzle", (0, 32, 64, 128), f"{gluon}: NVMMASharedLayout.swizzle_byte_width", lambda p: p["swizzle"]),
        Parameter("rank", (2, 3, 4, 5), f"{api}: tensorRank up to 5", lambda p: len(p["block"]),
                  {4: "oracles/triton_layouts.py models NVMMA shared layouts of rank 2-3",
                   5: "oracles/triton_layouts.py models NVMMA shared layouts of rank 2-3"}),
        Parameter("inner box bytes", (16, 32, 64, 128, 256, 512, 1024), f"{api}: boxDim[0] x element size, 16-byte "
                  "multiples, boxDim <= 256", lambda p: p["block"][-1] * p["elem_bits"] // 8),
        Parameter("box rows (log2)", tuple(range(9)), f"{api}: boxDim[i] <= 256 (this target: at most 16 KiB a box)",
                  lambda p: sum(b.bit_length() - 1 for b in p["block"][:-1])),
        Parameter("over an edge", ("no", "yes"), "PTX ISA: cp.async.bulk.tensor out-of-bound elements (zero fill, skipped stores)",
                  over_edge),
        Parameter("padded rows", ("no", "yes"), f"{api}: globalStrides, multiples of 16 bytes", lambda p: "yes" if p["row_pad"] else "no"),
        Parameter("num_warps", WARPS, "Triton: a power of two, up to 32 warps", lambda p: p["num_warps"]),
    ), illegal)
