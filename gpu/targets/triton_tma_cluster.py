"""``triton.tma_cluster``: Gluon TMA loads over a cluster of 2 or 4 CTAs (``num_ctas``) into a subview of a
multi-buffered allocation, the class of kernels Triton lowered wrongly before 3.9.0 (TMA into shared-memory subviews
targeting the wrong CTA: triton-lang/triton#11064 and #11136).

The descriptor's NVMMA layout splits the block between the CTAs (``cga_layout``: each CTA base moves one CTA tile
along the rows or the columns, or is zero: CTAs that hold the same part, each loading it). Each CTA loads its part on
its own barrier (as Triton's own tests of cluster TMA loads allocate it: ``harness.triton_compat.barriers``) into
buffer ``slot`` of ``buffers`` and reads it back in a blocked layout of the same split; the block is stored row-major. The oracle is the tiled load of PTX 9.7.9.25.5.2 (``cp.async.bulk.tensor``): each element of the
block is the tensor's at ``coord`` plus its index, and zero outside the tensor (Triton's ``padding="zero"``); and
each CTA's box is its part of the block, as wide as the swizzle span (``oracles.tma.block_boxes``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from math import prod
from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.shrink import replaced
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.gpu.targets.gluon_kernel import GluonKernelTarget, KernelSpec, cubin_launcher
from layoutfuzz.gpu.tensor_descriptors import encoded_maps
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.oracles.tma import block_boxes

INT_TYPES = {8: "int8", 16: "int16", 32: "int32"}
MAX_CTA_BYTES = 16 * 1024  # a CTA's part of the block (its box rows times its row)
SPLITS = ("rows", "columns", "copies")  # what one CTA base does: split the rows, split the columns, or none (copies)


def cta_part(p: Mapping[str, Any]) -> list[int]:
    """One CTA's part of the block: the block's rows and columns divided by the CTA bases that split them."""
    rows, columns = p["block"]
    return [rows >> p["splits"].count("rows"), columns >> p["splits"].count("columns")]


def cga_bases(splits: list[str]) -> list[list[int]]:
    """Gluon's ``cga_layout`` of the split: CTA bit k moves one CTA tile along the rows or the columns (the next
    power of two of its dim), or nowhere."""
    bases, moved = [], {"rows": 0, "columns": 0}
    for split in splits:
        if split == "copies":
            bases.append([0, 0])
            continue
        step = 1 << moved[split]
        moved[split] += 1
        bases.append([step, 0] if split == "rows" else [0, step])
    return bases


def copies_below_a_split(p: Mapping[str, Any]) -> bool:
    """Whether a zero CTA base (CTAs holding the same part) comes before one that splits the block: Triton 3.6.0 takes
    a CTA's part from the low bits of its rank all the same (docs/findings.md)."""
    splits = p["splits"]
    return "copies" in splits and any(s != "copies" for s in splits[splits.index("copies") + 1:])


def slot_misaligned(p: Mapping[str, Any]) -> bool:
    """Whether the loaded buffer starts off a 128-byte boundary of its allocation: Triton packs the buffers at a CTA
    part's size, and a TMA there faults (``misaligned address``; docs/findings.md)."""
    rows, columns = cta_part(p)
    return p["slot"] * rows * columns * p["elem_bits"] // 8 % 128 != 0


def unwritten(element_bytes: int) -> int:
    """What the output holds before the kernel: bytes 0x5A, as a signed element (never a value the oracle expects
    only by luck: the data is random, and elements past the tensor are zero)."""
    return int.from_bytes(b"\x5a" * element_bytes, "little", signed=True)


def block_values(case: Case) -> np.ndarray:
    """The tensor's elements (its padded rows), drawn from the case's seed and index."""
    p = case.params
    rows, columns = p["global_shape"][0], p["global_shape"][1] + p["row_pad"]
    info = np.iinfo(f"int{p['elem_bits']}")
    return np.random.default_rng([case.seed, case.index]).integers(info.min, info.max, (rows, columns), dtype=f"int{p['elem_bits']}",
                                                                   endpoint=True)


def probe_arguments(p: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The descriptor's CTA-split NVMMA layout and ``tma_cluster_probe``'s constexprs for a case (needs Triton): the
    registers read the block in a blocked layout of the same split (a CTA reads only its own shared memory: Triton
    3.6.0 fails to legalize a local_load from another CTA's)."""
    from triton.experimental.gluon import language as ttgl

    e = p["elem_bits"] // 8
    bases = cga_bases(p["splits"])
    rows, columns = cta_part(p)
    vector = min(columns, 16 // e)
    lanes = min(32, columns // vector)
    registers = ttgl.BlockedLayout([1, vector], [32 // lanes, lanes], [p["num_warps"], 1], [1, 0], cga_layout=bases)
    constexprs = {"BUFFERS": p["buffers"], "SLOT": p["slot"], "COORD": tuple(p["coord"]), "L": registers,
                  "BYTES": rows * columns * e, "S0": p["block"][0], "S1": p["block"][1]}
    return ttgl.NVMMASharedLayout(p["swizzle"], p["elem_bits"], 2, cga_layout=bases), constexprs


def probe_signature(p: Mapping[str, Any], layout: Any) -> dict[str, str]:
    """The probe's argument types for a compile without a device: the tensor descriptor of the block in ``layout``
    (``probe_arguments``), and the output pointer."""
    from layoutfuzz.gpu.direct_ttgir import INT_NAMES

    ty = INT_NAMES[p["elem_bits"]]
    return {"in_desc": f"tensordesc<{ty}[{p['block'][0]}, {p['block'][1]}],{layout!r}>", "out": "*" + ty}


class TritonTmaCluster(GluonKernelTarget):
    name = "triton.tma_cluster"
    layer = "Triton's TMA lowering over a cluster (CTA-split NVMMA layouts, shared-memory subviews)"
    description = "Gluon TMA loads over a cluster of 2 or 4 CTAs into a subview of a multi-buffer, on the GPU, vs the tiled-load oracle"
    requires = ("cuda device sm_90", "triton")
    prebuilt = True  # its kernels take a tensor descriptor, rebuilt without Triton (gpu.tensor_descriptors)
    probe_name = "tma_cluster_probe"  # the Gluon kernel of gpu.gluon_probes each case runs

    def parameter_space(self) -> Space:
        return triton_tma_cluster_space()

    def generate(self, source: Source) -> dict[str, Any]:
        """2 or 4 CTAs, each base splitting the rows (one in two), the columns or neither; a CTA's row at least the
        swizzle span and 16 bytes (Triton aborts below it), its box at most 16 KiB; 1, 2 or 4 buffers."""
        elem_bits = source.choice((8, 16, 32))
        e = elem_bits // 8
        swizzle = source.choice((0, 32, 64, 128))
        splits = [source.choice(("rows", "rows", "columns", "copies")) for _ in range(source.integer(1, 2))]
        least = max(16, swizzle) // e  # a CTA's row, in elements
        while least << splits.count("columns") > 256:  # the block's row holds at most 256 elements
            splits[splits.index("columns")] = "rows"
        room = (256 // (least << splits.count("columns"))).bit_length() - 1
        columns = least << source.integer(0, room)
        low = 3 if swizzle else 0  # a swizzled box holds the 8-row atom
        high = max(low, min((MAX_CTA_BYTES // (columns * e)).bit_length() - 1, 8 - splits.count("rows")))
        rows = 1 << source.integer(low, high)
        block = [rows << splits.count("rows"), columns << splits.count("columns")]
        global_shape, coord = [], []
        for d, b in enumerate(block):
            n = max(1, b * source.integer(1, 3) + source.integer(-b // 2, b // 2))
            global_shape.append(n)
            hi = n - 1 if source.integer(0, 3) == 0 else max(0, n - b)  # a quarter of the blocks hang over the far edge
            unit = 16 // e if d == 1 else 1  # the innermost coordinate is 16-byte aligned
            coord.append(unit * source.integer(0, hi // unit))
        row_pad = (16 // e) * source.integer(0, 2) + (-global_shape[1]) % (16 // e)  # row strides of 16-byte multiples
        buffers = source.choice((1, 2, 4))
        return {"elem_bits": elem_bits, "swizzle": swizzle, "splits": splits, "block": block, "global_shape": global_shape,
                "coord": coord, "row_pad": row_pad, "buffers": buffers, "slot": source.integer(0, buffers - 1),
                "num_warps": 1 << source.integer(0, 3)}

    def validate(self, case: Case) -> None:
        """The generator's rules: 1 or 2 CTA bases, rows and columns powers of two, a CTA's row of at least 16 bytes
        and the swizzle span, at most 256 elements a row and 16 KiB a CTA's part, coordinates inside the tensor
        (the innermost 16-byte aligned), row strides of 16-byte multiples, a slot among 1, 2 or 4 buffers, 1-8 warps."""
        p = case.params
        if p.get("elem_bits") not in INT_TYPES or p.get("swizzle") not in (0, 32, 64, 128):
            raise ValueError("elem_bits must be 8/16/32 and swizzle 0/32/64/128")
        splits = p.get("splits")
        if not isinstance(splits, list) or not 1 <= len(splits) <= 2 or any(s not in SPLITS for s in splits):
            raise ValueError(f"splits: 1 or 2 of {SPLITS} (2 or 4 CTAs)")
        block, shape, coord = p.get("block"), p.get("global_shape"), p.get("coord")
        if not all(isinstance(x, list) and len(x) == 2 for x in (block, shape, coord)):
            raise ValueError("block, global_shape and coord are pairs")
        e = p["elem_bits"] // 8
        rows, columns = cta_part(p)
        if any(b & (b - 1) or b < 1 for b in block) or rows < 1 or rows << splits.count("rows") != block[0] or \
                columns << splits.count("columns") != block[1]:
            raise ValueError("the block's dims are powers of two that the CTA bases divide")
        if columns * e < max(16, p["swizzle"]) or block[1] > 256 or block[0] > 256 or rows * columns * e > MAX_CTA_BYTES:
            raise ValueError("a CTA's row spans 16 bytes and the swizzle, rows have at most 256 elements, a CTA's part 16 KiB")
        if p["swizzle"] and rows < 8:
            raise ValueError("a swizzled CTA part holds the 8-row atom")
        if any(n < 1 for n in shape) or any(not 0 <= c < n for c, n in zip(coord, shape)) or (coord[1] * e) % 16:
            raise ValueError("coordinates lie inside the tensor, the innermost 16-byte aligned")
        if not isinstance(p.get("row_pad"), int) or p["row_pad"] < 0 or ((shape[1] + p["row_pad"]) * e) % 16:
            raise ValueError("the row stride is a 16-byte multiple")
        if p.get("buffers") not in (1, 2, 4) or not 0 <= p.get("slot", -1) < p["buffers"] or p.get("num_warps") not in (1, 2, 4, 8):
            raise ValueError("a slot among 1, 2 or 4 buffers, and 1-8 warps")

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """One buffer, slot 0, the second CTA base dropped, a coordinate at 0, the tensor halved, fewer warps, no
        row padding; ``validate`` keeps the rules."""
        p = case.params
        if p["buffers"] > 1:
            yield replaced(p, buffers=1, slot=0)
        if p["slot"]:
            yield replaced(p, slot=0)
        if len(p["splits"]) > 1:
            last = p["splits"][-1]
            block = [p["block"][0] >> (last == "rows"), p["block"][1] >> (last == "columns")]
            yield replaced(p, splits=p["splits"][:1], block=block)
        for d in range(2):
            if p["coord"][d]:
                yield replaced(p, coord=[0 if i == d else c for i, c in enumerate(p["coord"])])
            if p["global_shape"][d] > 1:
                yield replaced(p, global_shape=[n // 2 if i == d else n for i, n in enumerate(p["global_shape"])])
        if p["num_warps"] > 1:
            yield replaced(p, num_warps=p["num_warps"] // 2)
        if p["row_pad"]:
            yield replaced(p, row_pad=(-p["global_shape"][1]) % (16 // (p["elem_bits"] // 8)))

    def family(self, case: Case) -> str:
        p = case.params
        splits = p.get("splits", [])
        view = "subview" if p.get("buffers", 1) > 1 else "whole buffer"
        return f"{1 << len(splits)} CTAs:{'+'.join(splits) or '?'}:{view}"

    def tensor_maps(self, p: Mapping[str, Any]) -> list[dict[str, Any]]:
        """What Triton should encode: the swizzle mode, and a box of one CTA's rows as wide as the swizzle span."""
        part = cta_part(p)
        (_, box), *_ = block_boxes(part, p["elem_bits"] // 8, p["swizzle"])
        return [{"swizzle": box.swizzle.spec.cuda, "block_size": [part[0], box.box_dims[0]]}]

    def expected(self, case: Case) -> Any:
        p = case.params
        values = block_values(case)
        (r0, c0), (rows, columns) = p["coord"], p["block"]
        n0, n1 = p["global_shape"]
        block = np.zeros((rows, columns), dtype=values.dtype)
        inside = values[r0:min(n0, r0 + rows), c0:min(n1, c0 + columns)]  # zero past the tensor's bounds
        block[:inside.shape[0], :inside.shape[1]] = inside
        return {"tensor_maps": self.tensor_maps(p), "load": block.tobytes().hex()}

    def kernel_spec(self, case: Case) -> KernelSpec:
        from layoutfuzz.gpu import gluon_probes

        p = case.params
        layout, constexprs = probe_arguments(p)
        return KernelSpec(getattr(gluon_probes, self.probe_name), probe_signature(p, layout), constexprs, p["num_warps"],
                          1 << len(p["splits"]))

    def run(self, case: Case) -> dict[str, Any]:
        p = case.params
        values = block_values(case)
        before = np.full(prod(p["block"]), unwritten(p["elem_bits"] // 8), dtype=values.dtype)
        maps, block = self.run_probe(case, tensor=values, block=before, written="block")
        return {"tensor_maps": maps, "load": block.tobytes().hex()}

    def run_probe(self, case: Case, tensor: np.ndarray, block: np.ndarray, written: str) -> tuple[list[dict[str, Any]], np.ndarray]:
        """Runs the case's probe on the global ``tensor`` (rows padded to the row stride; its descriptor's argument)
        and the row-major ``block`` (its pointer argument); returns the tensor maps the kernel was compiled for and
        ``written`` ("tensor" or "block") as the kernel left it, between canary guards. A prebuilt (or cached) kernel
        runs on NumPy buffers through cuda.core, else Triton's JIT on torch tensors (``$LAYOUTFUZZ_TRITON_JIT=1``)."""
        shape = tuple(case.params["global_shape"])
        arrays = {"tensor": tensor, "block": block}
        kernel = self.kernel_for(case)
        if kernel is None:
            return self._run_probe_through_jit(case, arrays, written)
        from layoutfuzz.gpu.device_arrays import device_input, device_output
        from layoutfuzz.gpu.tensor_descriptors import HostTensorDescriptor

        stream = cubin_launcher().stream
        on_device = {name: (device_output if name == written else device_input)(values, name, stream)
                     for name, values in arrays.items()}
        self.execute(case, HostTensorDescriptor(on_device["tensor"], shape, (tensor.shape[1], 1)), on_device["block"],
                     kernel=kernel)
        return encoded_maps(kernel.tensor_maps), on_device[written].read(stream)

    def _run_probe_through_jit(self, case: Case, arrays: dict[str, np.ndarray], written: str) -> tuple[list[dict[str, Any]], np.ndarray]:
        import torch
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

        from layoutfuzz.gpu.guards import guarded_output

        p = case.params
        spec = self.kernel_spec(case)
        guarded = guarded_output(torch.from_numpy(arrays[written]).cuda(), written)
        on_device = {name: guarded.tensor if name == written else torch.from_numpy(values).cuda() for name, values in arrays.items()}
        tensor = on_device["tensor"]
        desc = TensorDescriptor(tensor, list(p["global_shape"]), list(tensor.stride()), list(p["block"]), probe_arguments(p)[0])
        compiled = self.launch(spec.kernel, desc, on_device["block"], **spec.constexprs, num_warps=spec.num_warps,
                               num_ctas=spec.num_ctas)
        guarded.check()
        return encoded_maps(compiled.metadata.tensordesc_meta), guarded.tensor.cpu().numpy()

    def reproducer_script(self, case: Case) -> str | None:
        """The probe written out (``gluon_probes.tma_cluster_probe`` or its store's mirror, with the release shims it
        calls: the TMA copy's name, a barrier of each CTA's own), the layouts as literals, a ``TensorDescriptor`` over
        a torch tensor, launched through Triton's JIT as one cluster; expected: the block the coordinates name (zero
        past the tensor), or for a store the tensor with that block written. Needs a GPU (``gpu.script_parts``).
        None for the multicast probes (their loads need 3.7.1, whose kernels reach the GPU compiled ahead)."""
        if self.probe_name not in ("tma_cluster_probe", "tma_cluster_store_probe"):
            return None
        return tma_cluster_script(case, store=self.probe_name == "tma_cluster_store_probe")

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """The tensor map first, then the block element by element: which CTA's part went wrong (by the CTA tile of
        each wrong element), never how many elements."""
        if observed["tensor_maps"] != expected["tensor_maps"]:
            return Comparison(False, 1, (f"tensor maps: expected {expected['tensor_maps']} got {observed['tensor_maps']}",),
                              "tensor-map", "Triton encoded another swizzle or box than a CTA's part of the NVMMA layout")
        p = case.params
        kind = f"int{p['elem_bits']}"
        want = np.frombuffer(bytes.fromhex(expected["load"]), kind).reshape(p["block"])
        got = np.frombuffer(bytes.fromhex(observed["load"]), kind).reshape(p["block"])
        bad = np.argwhere(want != got)
        if bad.size == 0:
            return Comparison(True)
        rows, columns = cta_part(p)
        tiles = sorted({(int(r) // rows, int(c) // columns) for r, c in bad})
        wrong = got[want != got]
        lines = tuple(f"[{int(r)}, {int(c)}]: expected {int(want[r, c])}, got {int(got[r, c])}" for r, c in bad[:8])
        if np.all(wrong == unwritten(p["elem_bits"] // 8)):
            kind_of = "not written"
        elif np.all(wrong == 0):
            kind_of = "zeros where data belongs"
        else:
            kind_of = "wrong data"
        where = "every CTA tile" if len(tiles) == (p["block"][0] // rows) * (p["block"][1] // columns) else "some CTA tiles"
        return Comparison(False, len(bad), lines, f"load: {kind_of} in {where}",
                          f"{len(bad)} elements wrong in CTA tiles {tiles[:8]} (of rows x columns {rows} x {columns})")


def triton_tma_cluster_space() -> Space:
    """``triton.tma_cluster``: a Gluon TMA load over a cluster of CTAs into a subview of a multi-buffer."""
    gluon = "Gluon: NVMMASharedLayout(cga_layout), TensorDescriptor, tma load into shared_memory_descriptor.index"
    api = "CUDA driver API: cuTensorMapEncodeTiled"

    def over_edge(p: Mapping[str, Any]) -> str:
        return "yes" if any(c + b > n for c, b, n in zip(p["coord"], p["block"], p["global_shape"])) else "no"

    def slot(p: Mapping[str, Any]) -> str:
        return "only" if p["buffers"] == 1 else "first" if p["slot"] == 0 else "last" if p["slot"] == p["buffers"] - 1 else "middle"

    def illegal(a: str, x: Any, b: str, y: Any) -> bool:
        pair = {a: x, b: y}
        if "CTAs" in pair and "CTA bases" in pair:
            return pair["CTA bases"].count("+") + 1 != pair["CTAs"].bit_length() - 1
        if "CTA bases" in pair and "CTA row bytes" in pair:  # the block's row (the CTA's, once per column base) <= 256
            return pair["CTA row bytes"] // 4 << pair["CTA bases"].split("+").count("columns") > 256  # elements, 32-bit
        if "CTA bases" in pair and "CTA rows (log2)" in pair:  # the block's rows <= 256
            return pair["CTA rows (log2)"] + pair["CTA bases"].split("+").count("rows") > 8
        if "buffers" in pair and "slot" in pair:
            return (pair["buffers"] == 1) != (pair["slot"] == "only") or (pair["buffers"] == 2 and pair["slot"] == "middle")
        if "CTA row bytes" in pair and "swizzle" in pair:  # a CTA's row spans the swizzle (and 16 bytes)
            return pair["CTA row bytes"] < max(16, pair["swizzle"])
        if "CTA row bytes" in pair and "element bits" in pair:  # at most 256 elements a row
            return pair["CTA row bytes"] > 256 * pair["element bits"] // 8
        if "CTA rows (log2)" in pair and "swizzle" in pair:  # a swizzled part holds the 8-row atom, in 16 KiB
            return (pair["swizzle"] > 0 and pair["CTA rows (log2)"] < 3) or max(16, pair["swizzle"]) << pair["CTA rows (log2)"] > 16384
        if "CTA rows (log2)" in pair and "CTA row bytes" in pair:
            return pair["CTA row bytes"] << pair["CTA rows (log2)"] > 16384
        return False

    kinds = ("rows", "columns", "copies")
    return Space((
        Parameter("element bits", (8, 16, 32), f"{gluon}: element_bitwidth 8-32", lambda p: p["elem_bits"]),
        Parameter("swizzle", (0, 32, 64, 128), f"{gluon}: swizzle_byte_width", lambda p: p["swizzle"]),
        Parameter("CTAs", (2, 4, 8), "CUDA: a portable cluster holds up to 8 CTAs (Triton's num_ctas)", lambda p: 1 << len(p["splits"]),
                  {8: "a CTA's part halves again: the 16-byte row and the 8-row swizzle atom leave few blocks; 2 and 4 CTAs split both dims"}),
        Parameter("CTA bases", (*kinds, *(f"{a}+{b}" for a in kinds for b in kinds)),
                  "Gluon: cga_layout bases, each a CTA tile along rows or columns, or zero (CTAs with the same part)",
                  lambda p: "+".join(p["splits"])),
        Parameter("CTA row bytes", (16, 32, 64, 128, 256, 512, 1024), f"{api}: boxDim[0] x element size, per CTA",
                  lambda p: cta_part(p)[1] * p["elem_bits"] // 8),
        Parameter("CTA rows (log2)", tuple(range(9)), f"{api}: boxDim[1] <= 256 (this target: at most 16 KiB a CTA)",
                  lambda p: cta_part(p)[0].bit_length() - 1),
        Parameter("buffers", (1, 2, 4), f"{gluon}: allocate_shared_memory([BUFFERS, ...]) and .index(slot)", lambda p: p["buffers"]),
        Parameter("slot", ("only", "first", "middle", "last"), f"{gluon}: the subview loaded", slot),
        Parameter("over an edge", ("no", "yes"), "PTX ISA: cp.async.bulk.tensor out-of-bound elements (zero fill)", over_edge),
        Parameter("padded rows", ("no", "yes"), f"{api}: globalStrides, multiples of 16 bytes", lambda p: "yes" if p["row_pad"] else "no"),
        Parameter("num_warps", (1, 2, 4, 8), "Triton: a power of two (this target: up to 8 warps a CTA)", lambda p: p["num_warps"]),
    ), illegal)


def tma_cluster_script(case: Case, store: bool) -> str:
    """``TritonTmaCluster.reproducer_script``: a cluster TMA load (``store``: a store) of case ``case``."""
    from layoutfuzz.gpu import gluon_probes
    from layoutfuzz.gpu.script_parts import gpu_script, source_of
    from layoutfuzz.harness.triton_compat import barriers

    p = case.params
    e = p["elem_bits"] // 8
    kind = INT_TYPES[p["elem_bits"]]
    info = np.iinfo(kind)
    bases = cga_bases(p["splits"])
    rows, columns = cta_part(p)
    vector = min(columns, 16 // e)
    lanes = min(32, columns // vector)
    (r0, c0), (b0, b1), (n0, n1) = p["coord"], p["block"], p["global_shape"]
    ctas = 1 << len(p["splits"])
    shims = ["# names that differ between releases: the TMA copies (renamed in 3.8.0), a barrier of each CTA's own",
             "# (mbarrier.allocate_mbarrier from 3.7.1; in 3.6.0 a one-element barrier whose CGA layout gives each CTA one)",
             'tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared',
             'tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global',
             'barrier_of_each_cta = getattr(mbarrier, "allocate_mbarrier", None) or _barrier_of_each_cta_3_6',
             'publish_barrier_init = getattr(mbarrier, "sync_cluster_init", None) or _nothing']
    helpers = source_of(barriers._own_layout, barriers._barrier_of_each_cta_3_6, barriers._nothing, gluon_probes._offsets_2d)
    if store:
        kernel = helpers + "\n\n" + "\n".join(shims) + "\n\n\n" + source_of(gluon_probes.tma_cluster_store_probe)
    else:
        kernel = helpers + "\n\n" + "\n".join(shims) + "\n\n\n" + source_of(gluon_probes._load_over_cluster,
                                                                        gluon_probes.tma_cluster_probe)
    layouts = [f"SHARED = ttgl.NVMMASharedLayout({p['swizzle']}, {p['elem_bits']}, 2, cga_layout={bases!r})",
               f"L = ttgl.BlockedLayout([1, {vector}], [{32 // lanes}, {lanes}], [{p['num_warps']}, 1], [1, 0], "
               f"cga_layout={bases!r})"]
    common = (f"BUFFERS={p['buffers']}, SLOT={p['slot']}, COORD={tuple(p['coord'])!r}, L=L, S0={b0}, S1={b1}, "
              f"num_warps={p['num_warps']}, num_ctas={ctas}")
    split = ", ".join(p["splits"])
    setting = (f"a {b0} x {b1} block of {kind} at {p['coord']} of a {n0} x {n1} tensor (rows padded by {p['row_pad']} "
               f"elements), NVMMA shared layout of swizzle {p['swizzle']} split over a cluster of {ctas} CTAs (CGA bases "
               f"{bases}: {split}), buffer {p['slot']} of {p['buffers']} in one allocation, {p['num_warps']} warps")
    tensor_values = (f"np.random.default_rng([{case.seed}, {case.index}]).integers({info.min}, {info.max}, "
                     f"({n0}, {n1 + p['row_pad']}), dtype=np.{kind}, endpoint=True)")
    if store:
        return gpu_script(
            doc=(f"A Gluon TMA store over a cluster: {setting}. Each CTA writes its part of the block into the buffer "
                 "and TMA-stores it; the tensor must then hold the block where the block lies inside it and keep every "
                 "other byte (the TMA unit writes the whole 16-byte granule that holds the innermost bound: that much "
                 "past the bound is the hardware's, see https://github.com/triton-lang/triton/issues/11583)."),
            child_imports=("from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma\n"
                           "from triton.experimental.gluon.nvidia.hopper import TensorDescriptor"),
            kernel=kernel, layouts=layouts,
            launch=['tensor = on_gpu(inputs["before"])', 'src = on_gpu(inputs["block"])',
                    f"desc = TensorDescriptor(tensor, [{n0}, {n1}], list(tensor.stride()), [{b0}, {b1}], SHARED)",
                    f"launch(tma_cluster_store_probe, desc, src, {common})",
                    'outputs = {"tensor": tensor.cpu().numpy()}'],
            inputs=[f"block = np.random.default_rng([{case.seed}, {case.index}, 1]).integers({info.min}, {info.max}, "
                    f"({b0}, {b1}), dtype=np.{kind}, endpoint=True)",
                    f"before = np.full(({n0}, {(n1 + p['row_pad']) * e}), 0x5A, np.uint8).view(np.{kind})"
                    "  # every byte 0x5A",
                    'return {"block": block, "before": before}'],
            expected=['tensor = inputs["before"].copy()',
                      f"reach = -(-{n1} * {e} // 16) * 16 // {e}  # the 16-byte granule holding the innermost bound",
                      f"r1, c1 = min({n0}, {r0} + {b0}), min(reach, {c0} + {b1})",
                      f'tensor[{r0}:r1, {c0}:c1] = inputs["block"][:r1 - {r0}, :c1 - {c0}]',
                      'return {"tensor": tensor}'],
            expected_text=f"the tensor holds the {b0} x {b1} block at {p['coord']} (clipped to the tensor) and nothing else")
    before = int.from_bytes(b"\x5a" * e, "little", signed=True)
    return gpu_script(
        doc=(f"A Gluon TMA load over a cluster: {setting}. Each CTA loads its part of the block on its own barrier and "
             "reads it back in a blocked layout of the same split; the block stored row-major must be the tensor's "
             "elements at the coordinates (zero past the tensor's bounds: padding=\"zero\")."),
        child_imports=("from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma\n"
                       "from triton.experimental.gluon.nvidia.hopper import TensorDescriptor"),
        kernel=kernel, layouts=layouts,
        launch=['tensor = on_gpu(inputs["tensor"])', 'block = on_gpu(inputs["before"])',
                f"desc = TensorDescriptor(tensor, [{n0}, {n1}], list(tensor.stride()), [{b0}, {b1}], SHARED)",
                f"launch(tma_cluster_probe, desc, block, {common}, BYTES={rows * columns * e})",
                'outputs = {"block": block.cpu().numpy()}'],
        inputs=[f"tensor = {tensor_values}",
                f"before = np.full(({b0}, {b1}), {before}, np.{kind})  # bytes 0x5A: not written by the load",
                'return {"tensor": tensor, "before": before}'],
        expected=[f"block = np.zeros(({b0}, {b1}), np.{kind})  # zero past the tensor's bounds",
                  f"inside = inputs[\"tensor\"][{r0}:min({n0}, {r0 + b0}), {c0}:min({n1}, {c0 + b1})]",
                  "block[:inside.shape[0], :inside.shape[1]] = inside",
                  'return {"block": block}'],
        expected_text=f"the {b0} x {b1} block at {p['coord']} of the tensor, zero past its bounds")
