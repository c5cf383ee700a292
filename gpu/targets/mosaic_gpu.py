"""Target ``mosaic.gpu``: JAX Mosaic GPU kernels on an sm_90 device, against the PTX rules.

- ``tma``: Mosaic's ``async_copy`` loads a window of a larger array into shared memory with a swizzle; an unswizzled
  TMA store then copies the shared-memory bytes out as they lie (a plain copy: ``tma.copy`` checks that rule on the
  hardware). The image must be ``oracles.tma.TiledBox``'s placement of the window (PTX 5.5.7), the buffer at offset 0
  of the swizzle's repeat, as Mosaic's own swizzled reads assume.
- ``tma_tiled``: the same through Mosaic's ``TileTransform``: each (rows, span) tile one box after another.
- ``tma`` loads with ``ctas`` 2 or 4: the window multicast to a cluster's CTAs by a collective ``async_copy``, each
  CTA loading its share of the rows; every CTA's buffer must hold the whole image.
- Either, ``direction`` ``store``: a shared-memory image loaded unswizzled (bytes as they lie), then stored with the
  swizzle into the window (or tiles) of a global array passed in and out. Each element must come from where
  ``TiledBox`` places it, and the rest of the array must be untouched.
- ``wgmma``: A (m x k) and B (k x n) loaded by TMA into swizzled tiles, ``mgpu.wgmma``, the accumulator stored: the
  product must be A @ B exactly (small integers, exact in every input type and in the f32 or s32 accumulator). The
  input types are f16, bf16, tf32, e4m3, e5m2 and s8. B lies MN-major (16-bit types only) or K-major (B transposed
  in global memory, (8, S) tiles, Mosaic's ``TransposeTransform`` and ``memref_transpose``). A comes from shared
  memory, K-major or (16-bit types) MN-major the same way, or from registers in Mosaic's WGMMA register layout. A
  wrong descriptor, swizzle, tile order or register fragment in Mosaic gives a wrong product.

Kernels are compiled once per shape in each worker; XLA's allocator is told not to take the GPU's memory up front.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.mosaic_gpu import (
    CLUSTER_CTAS,
    DIRECTIONS,
    ELEMENT_BYTES,
    REGISTER_A,
    SWIZZLES,
    TRANSPOSABLE,
    WGMMA_BYTES,
    WGMMA_TYPES,
    mosaic_gpu_case,
    multicast_share_bytes,
)
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.gpu.targets.base import GpuTarget
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Availability, package_versions
from layoutfuzz.oracles.tma import NVMMA_MODES, TiledBox
from layoutfuzz.oracles.wgmma import WGMMA_N

SHOWN = 4
UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32}
JAX_TYPES = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2",
             "s8": "int8"}  # wgmma's input types as jnp dtypes (tf32: f32 in memory, its low mantissa bits ignored)


def _data(p: Mapping[str, Any]) -> np.ndarray:
    """The case's source array: distinct values in each element (its index, hashed), or for wgmma integers that every
    input type holds exactly: [-3, 3] (e5m2 has 2 mantissa bits), all of s8."""
    rng = np.random.default_rng(p["data_seed"])
    if p["family"] == "wgmma":
        low, high = (-128, 127) if p["dtype"] == "s8" else (-3, 3)
        return rng.integers(low, high + 1, size=(p["m"] + p["k"], max(p["k"], p["n"]))).astype(np.float32)
    shape = _gmem_shape(p)
    dtype = UNSIGNED[p["element_bytes"]]
    values = rng.integers(0, np.iinfo(dtype).max, size=shape, dtype=np.uint64, endpoint=True)
    return values.astype(dtype)


def _gmem_shape(p: Mapping[str, Any]) -> tuple[int, ...]:
    if p["family"] == "tma":
        return (p["row_offset"] + p["rows"] + 2, p["columns"])  # the window, with rows around it
    return tuple(p["shape"])


def smem_shape(p: Mapping[str, Any]) -> tuple[int, ...]:
    if p["family"] == "tma":
        return (p["rows"], p["columns"])
    (rows, cols), (tr, tc) = p["shape"], p["tile"]
    return (rows // tr, cols // tc, tr, tc)


def _boxes(p: Mapping[str, Any], array: np.ndarray) -> list[tuple[np.ndarray, TiledBox]]:
    """The global-memory views a TMA family's copy moves (the window, or the tiles in order), each with the box that
    places it in shared memory (oracles/tma.py, PTX 5.5.7): a tile after another, from offset 0."""
    e, mode = p["element_bytes"], NVMMA_MODES[p["swizzle"]]
    if p["family"] == "tma":
        views = [array[p["row_offset"]:p["row_offset"] + p["rows"]]]
        box_dims = (p["columns"], p["rows"])
    else:
        tr, tc = p["tile"]
        rows, cols = p["shape"]
        views = [array[i * tr:(i + 1) * tr, j * tc:(j + 1) * tc] for i in range(rows // tr) for j in range(cols // tc)]
        box_dims = (tc, tr)
    per_tile = box_dims[0] * box_dims[1] * e
    return [(view, TiledBox(box_dims, e, (1, 1), mode, number * per_tile)) for number, view in enumerate(views)]


def expected_image(p: Mapping[str, Any], source: np.ndarray) -> np.ndarray:
    """The shared-memory bytes after the load: each element where ``TiledBox`` places it (oracles/tma.py)."""
    e = p["element_bytes"]
    image = np.zeros(int(np.prod(smem_shape(p))) * e, dtype=np.uint8)
    for values, box in _boxes(p, source):
        raw = np.ascontiguousarray(values).view(np.uint8).reshape(-1, e)  # innermost fastest, as placement()
        for address, data in zip(box.placement(), raw):
            image[address:address + e] = data
    return image


def expected_store(p: Mapping[str, Any], image: np.ndarray, initial: np.ndarray) -> np.ndarray:
    """Global memory after the store, as bytes: ``initial`` (the array before), with each element of the window (or
    tiles) read from the shared-memory bytes ``image`` where ``TiledBox`` places it, the store being the load's
    inverse (PTX 5.5.7 defines one placement for both directions); nothing else written."""
    e = p["element_bytes"]
    out = initial.copy()
    raw = np.ascontiguousarray(image).view(np.uint8).reshape(-1)
    for view, box in _boxes(p, out):
        elements = np.stack([raw[address:address + e] for address in box.placement()])
        view[...] = elements.reshape(-1).view(view.dtype).reshape(view.shape)
    return out.view(np.uint8).reshape(-1)


def _store_data(p: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """A store case's shared-memory image (of the smem shape) and the global array's values before it, distinct
    random values of its element type, both from its ``data_seed``."""
    rng = np.random.default_rng(p["data_seed"])
    dtype = UNSIGNED[p["element_bytes"]]
    top = np.iinfo(dtype).max
    image = rng.integers(0, top, size=smem_shape(p), dtype=np.uint64, endpoint=True).astype(dtype)
    return image, rng.integers(0, top, size=_gmem_shape(p), dtype=np.uint64, endpoint=True).astype(dtype)


class MosaicGpu(GpuTarget):
    name = "mosaic.gpu"
    layer = "JAX Mosaic GPU (async_copy / TMA descriptors, wgmma)"
    description = "JAX Mosaic GPU kernels: swizzled TMA loads (raw shared memory vs PTX 5.5.7) and wgmma from swizzled tiles"
    requires = ("cuda device sm_90", "jax with its CUDA plugin and Mosaic GPU")
    needs = ("jax", "jaxlib")
    preload = ("numpy",)  # jax is imported by each worker: its CUDA client must not come from a forked parent
    max_batch = 64

    def availability(self) -> Availability:
        base = super().availability()
        if not base.available:
            return base
        import importlib.util

        try:
            found = importlib.util.find_spec("jax._src.lib.mosaic_gpu") is not None
        except Exception as exc:
            return Availability(False, f"jax's Mosaic GPU does not load here: {exc}")
        return Availability(True) if found else Availability(False, "jaxlib has no Mosaic GPU bindings here")

    def versions(self) -> Mapping[str, str]:
        return {**super().versions(), **package_versions("jax", "jaxlib")}

    def generate(self, source: Source) -> dict[str, Any]:
        return mosaic_gpu_case(source)

    def validate(self, case: Case) -> None:
        p = case.params
        if p.get("family") not in ("tma", "tma_tiled", "wgmma"):
            raise ValueError("family must be tma, tma_tiled or wgmma")
        if p["family"] == "wgmma":
            validate_wgmma(p)
            return
        if p["element_bytes"] not in ELEMENT_BYTES or p["swizzle"] not in SWIZZLES:
            raise ValueError(f"element bytes {ELEMENT_BYTES}, swizzle {SWIZZLES}")
        if p.get("direction", "load") not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}")
        ctas = p.get("ctas", 1)
        if ctas not in CLUSTER_CTAS or (ctas > 1 and (p["family"] != "tma" or p.get("direction") == "store" or p["rows"] % ctas)):
            raise ValueError(f"ctas is one of {CLUSTER_CTAS}; more than 1 only for a window load whose rows they share")
        if ctas > 1 and multicast_share_bytes(p) % 128:
            raise ValueError("each CTA's share of a multicast lands in shared memory at a multiple of its size, and a TMA "
                             "destination off a 128-byte boundary faults the GPU (docs/findings.md: Mosaic's multicast shares)")
        expected_image(p, _data(p))

    def family(self, case: Case) -> str:
        p = case.params
        if p["family"] == "wgmma":
            b_major, a_from, a_major = p.get("b_major", "mn"), p.get("a_from", "smem"), p.get("a_major", "k")
            return (f"wgmma {p['dtype']} {p['swizzle']}B" + (" B K-major" if b_major == "k" else "")
                    + (" A in registers" if a_from == "registers" else "") + (" A MN-major" if a_major == "mn" else ""))
        store = " store" if p.get("direction") == "store" else ""
        multicast = " multicast" if p.get("ctas", 1) > 1 else ""
        return f"{p['family']}{store}{multicast} {p['swizzle'] or 'no'} swizzle"

    def parameter_space(self) -> Space:
        return Space((
            Parameter("family", ("tma", "tma_tiled", "wgmma"), "Mosaic GPU async_copy (with TileTransform), wgmma",
                      lambda p: p["family"]),
            Parameter("direction", DIRECTIONS, "TMA copies: global to shared memory, or shared to global (PTX 5.5.7)",
                      lambda p: p.get("direction", "load") if p["family"] != "wgmma" else None),
            Parameter("cluster CTAs", CLUSTER_CTAS, "CTAs a window load is multicast to (collective async_copy)",
                      lambda p: p.get("ctas", 1) if p["family"] == "tma" and p.get("direction", "load") == "load" else None),
            Parameter("swizzle", SWIZZLES, "PTX 5.5.7 modes Mosaic takes (bytes, 0 none)", lambda p: p["swizzle"]),
            Parameter("element bytes", ELEMENT_BYTES, "TMA element sizes", lambda p: p.get("element_bytes")),
            Parameter("wgmma type", WGMMA_TYPES, "PTX ISA 9.7.15.5: wgmma's input types (u8 and b1: Mosaic has none)",
                      lambda p: p.get("dtype")),
            Parameter("B major", ("mn", "k"), "PTX ISA 9.7.15.5.1.2: the contiguous dimension of B in shared memory",
                      lambda p: p.get("b_major", "mn") if p["family"] == "wgmma" else None),
            Parameter("A from", ("smem", "registers"), "PTX ISA 9.7.15.5: A from a descriptor or from registers",
                      lambda p: p.get("a_from", "smem") if p["family"] == "wgmma" else None),
            Parameter("A major", ("k", "mn"), "PTX ISA 9.7.15.5.1.2: the contiguous dimension of A in shared memory",
                      lambda p: p.get("a_major", "k") if p["family"] == "wgmma" else None),
            Parameter("wgmma N", tuple(range(8, 257, 8)), "PTX ISA 9.7.15.5: the N of the .m64nNk shapes",
                      lambda p: p.get("n") if p["family"] == "wgmma" else None),
        ), _illegal)

    def expected(self, case: Case) -> np.ndarray:
        p = case.params
        data = _data(p)
        if p["family"] == "wgmma":
            a, b = _operands(p, data)
            return (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32 if p["dtype"] == "s8" else np.float32)
        if p.get("direction") == "store":
            return expected_store(p, *_store_data(p))
        return np.tile(expected_image(p, data), p.get("ctas", 1))  # each CTA of a multicast holds the whole window

    def observed(self, case: Case) -> np.ndarray:
        return self.on_device(lambda: _faults_as_device_faults(self._observed, case))

    def _observed(self, case: Case) -> np.ndarray:
        p = case.params
        data = _data(p)
        if p["family"] == "wgmma":
            import jax.numpy as jnp

            dtype = jnp.dtype(JAX_TYPES[p["dtype"]])
            b_major, a_from, a_major = p.get("b_major", "mn"), p.get("a_from", "smem"), p.get("a_major", "k")
            a, b = _operands(p, data)
            kernel = _wgmma_kernel(p["dtype"], p["swizzle"], p["m"], p["k"], p["n"], b_major, a_from, a_major)
            b_global = np.ascontiguousarray(b.T) if b_major == "k" else b  # K-major: B^T's rows are B's columns
            a_global = np.ascontiguousarray(a.T) if a_major == "mn" else a  # MN-major: A^T's rows are A's columns
            return np.asarray(kernel(jnp.asarray(a_global, dtype), jnp.asarray(b_global, dtype)))
        layout = (p["family"], p["element_bytes"], p["swizzle"], _gmem_shape(p), smem_shape(p), p.get("row_offset", 0),
                  tuple(p.get("tile", ())))
        if p.get("direction") == "store":
            (out,) = _tma_store_kernel(*layout)(*_store_data(p))
            return np.asarray(out).view(np.uint8).reshape(-1)
        if p.get("ctas", 1) > 1:
            return np.asarray(_tma_multicast_kernel(*layout[1:-1], p["ctas"])(data)).view(np.uint8).reshape(-1)
        return np.asarray(_tma_kernel(*layout)(data)).view(np.uint8).reshape(-1)

    def compare(self, case: Case, expected: np.ndarray, observed: np.ndarray) -> Comparison:
        p = case.params
        observed = np.asarray(observed)
        if observed.shape != expected.shape:
            return Comparison(False, 1, (f"shape {observed.shape}, expected {expected.shape}",), "another shape")
        wrong = np.argwhere(observed != expected)
        if not len(wrong):
            return Comparison(True)
        if p["family"] == "wgmma":
            examples = tuple(f"D[{r}, {c}] = {observed[r, c]}, expected {expected[r, c]}" for r, c in wrong[:SHOWN])
            return Comparison(False, len(wrong), examples, f"wgmma {p['swizzle']}B: a wrong product",
                              f"{len(wrong)} of {expected.size} products differ")
        examples = tuple(f"byte {i}: {observed[i]:#04x}, expected {expected[i]:#04x}" for (i,) in wrong[:SHOWN])
        if p.get("direction") == "store":
            return Comparison(False, len(wrong), examples, f"{p['family']} store {p['swizzle']}B: global-memory bytes elsewhere",
                              f"{len(wrong)} of {expected.size} global-memory bytes differ from PTX 5.5.7's placement")
        return Comparison(False, len(wrong), examples, f"{p['family']} {p['swizzle']}B: shared-memory bytes elsewhere",
                          f"{len(wrong)} of {expected.size} shared-memory bytes differ from PTX 5.5.7's placement")


# what XLA's runtime says when a kernel faulted: the CUDA context is lost, and every later call in the process fails
DEVICE_FAULT = re.compile(r"CUDA_ERROR_(MISALIGNED_ADDRESS|ILLEGAL_ADDRESS|ILLEGAL_INSTRUCTION|LAUNCH_FAILED|HARDWARE_STACK_ERROR)"
                          r"|misaligned address|illegal memory access|unspecified launch failure")


def _faults_as_device_faults(observe: Any, case: Case) -> Any:
    """``observe(case)``, with an error of XLA's runtime that reports a device fault raised as ``DeviceFault``: the
    worker then ends (``GpuTarget.on_device``) instead of failing every later case on the lost context."""
    from layoutfuzz.gpu.device import DeviceFault

    try:
        return observe(case)
    except Exception as exc:
        if DEVICE_FAULT.search(str(exc)):
            raise DeviceFault(f"{type(exc).__name__}: {exc}") from exc
        raise


WGMMA_ONLY = frozenset({"wgmma type", "B major", "A from", "A major", "wgmma N"})


def validate_wgmma(p: Mapping[str, Any]) -> None:
    """The generator's wgmma rules (``generators.mosaic_gpu.wgmma_shape``), with why where PTX or Mosaic sets them."""
    if p["dtype"] not in WGMMA_TYPES or p["swizzle"] not in (32, 64, 128):
        raise ValueError(f"wgmma: a type of {WGMMA_TYPES}, swizzle 32/64/128")
    tile = p["swizzle"] // WGMMA_BYTES[p["dtype"]]
    b_major, a_from, a_major = p.get("b_major", "mn"), p.get("a_from", "smem"), p.get("a_major", "k")
    if b_major not in ("mn", "k") or a_major not in ("mn", "k") or a_from not in ("smem", "registers"):
        raise ValueError("B and A major are mn or k, A comes from smem or registers")
    if a_major == "mn" and (p["dtype"] not in TRANSPOSABLE or a_from != "smem"):
        raise ValueError("only a 16-bit A in shared memory may be MN-major (PTX: imm-trans-a)")
    if b_major == "mn" and p["dtype"] not in TRANSPOSABLE:
        raise ValueError("only 16-bit types may have an MN-major B (PTX: imm-trans-b)")
    if a_from == "registers" and (p["dtype"] not in REGISTER_A or (p["dtype"] == "s8" and p["swizzle"] == 32)):
        raise ValueError(f"Mosaic takes A in registers for {REGISTER_A} only, and not s8 with a 32B swizzle")
    if p["m"] % 64 or not 64 <= p["m"] <= 128 or p["k"] % tile or not tile <= p["k"] <= 4 * tile:
        raise ValueError("wgmma: m 64 or 128, k 1 to 4 swizzle rows")
    if p["n"] not in WGMMA_N[p["dtype"]] or (b_major == "mn" and p["n"] % tile):
        raise ValueError(f"wgmma: n one of the type's shapes, and a multiple of the swizzle row ({tile}) for an MN-major B")


def _illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """Element bytes and the direction belong to the TMA families, the cluster's CTAs to window loads, the wgmma
    parameters to wgmma (which needs a swizzle); PTX and Mosaic rule out some wgmma pairs (``validate_wgmma``)."""
    pair = {a: x, b: y}
    wgmma = bool(pair.keys() & WGMMA_ONLY)
    if "element bytes" in pair and wgmma:
        return True
    if "direction" in pair and wgmma:
        return True
    if "cluster CTAs" in pair and (wgmma or pair.get("family") in ("tma_tiled", "wgmma") or pair.get("direction") == "store"):
        return True  # a multicast is a window load
    if pair.get("family") == "wgmma":
        return "element bytes" in pair or "direction" in pair or pair.get("swizzle") == 0
    if pair.get("family") in ("tma", "tma_tiled"):
        return wgmma
    if pair.get("swizzle") == 0 and wgmma:
        return True
    dtype = pair.get("wgmma type")
    if pair.get("B major") == "mn" and (dtype is not None and dtype not in TRANSPOSABLE):
        return True
    if pair.get("A from") == "registers" and dtype is not None and dtype not in REGISTER_A:
        return True
    if pair.get("A major") == "mn" and (pair.get("A from") == "registers" or (dtype is not None and dtype not in TRANSPOSABLE)):
        return True
    n = pair.get("wgmma N")
    if n is not None and dtype is not None and n not in WGMMA_N[dtype]:
        return True
    if n is not None and pair.get("B major") == "mn" and n % 16:  # MN-major: whole swizzle rows of 16 to 64 elements
        return True
    return False


def _operands(p: Mapping[str, Any], data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m, k, n = p["m"], p["k"], p["n"]
    return data[:m, :k], data[m:m + k, :n]


def _jax() -> Any:
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # workers share the GPU
    import jax

    return jax


@contextlib.contextmanager
def _building() -> Iterator[None]:
    """The MLIR context Mosaic builds a kernel in (its dialect registered), as its own tests set one up."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir
    from jax.experimental.mosaic.gpu import dialect

    context = mlir.make_ir_context()
    dialect.register_dialect(context)
    with context, ir.Location.unknown():
        yield


def _global_side(mgpu: Any, family: str, smem: tuple[int, ...], row_offset: int, tile: tuple[int, ...]) -> dict[str, Any]:
    """The global-memory arguments of a TMA ``async_copy``: the window of ``smem[0]`` rows from ``row_offset`` (family
    ``tma``), or the tiling of the whole array into ``tile``s."""
    if family == "tma":
        return {"gmem_slice": (mgpu.ds(row_offset, smem[0]), slice(None))}
    return {"gmem_transform": mgpu.TileTransform(tile)}


@cache
def _tma_kernel(family: str, element_bytes: int, swizzle: int, gmem_shape: tuple[int, ...], smem: tuple[int, ...],
                row_offset: int, tile: tuple[int, ...]) -> Any:
    """A kernel: swizzled TMA load of the window (or of the tiled array) into shared memory, then an unswizzled TMA
    store of that memory as it lies."""
    jax = _jax()
    import jax.experimental.mosaic.gpu as mgpu

    dtype = UNSIGNED[element_bytes]

    def kernel(ctx: Any, src: Any, dst: Any, scratch: Any) -> None:
        buffer, barrier = scratch
        ctx.async_copy(src_ref=src, dst_ref=buffer, swizzle=swizzle or None, barrier=barrier,
                       **_global_side(mgpu, family, smem, row_offset, tile))
        barrier.wait()
        ctx.async_copy(src_ref=buffer, dst_ref=dst)
        ctx.await_async_copy(0)

    shape = jax.ShapeDtypeStruct(smem, dtype)
    with _building():
        return mgpu.as_gpu_kernel(kernel, (1, 1, 1), (128, 1, 1), jax.ShapeDtypeStruct(gmem_shape, dtype), shape,
                                  (shape, mgpu.TMABarrier()))


@cache
def _tma_multicast_kernel(element_bytes: int, swizzle: int, gmem_shape: tuple[int, ...], smem: tuple[int, ...],
                          row_offset: int, ctas: int) -> Any:
    """A kernel over a cluster of ``ctas`` CTAs: the window loaded with the swizzle by a collective ``async_copy``
    (each CTA loads its share of the rows and multicasts it to all), then each CTA's whole shared-memory buffer stored
    out unswizzled into its own slot of the output."""
    jax = _jax()
    import jax.experimental.mosaic.gpu as mgpu
    from jax._src.lib.mlir.dialects import gpu

    dtype = UNSIGNED[element_bytes]

    def kernel(ctx: Any, src: Any, dst: Any, scratch: Any) -> None:
        buffer, barrier = scratch
        ctx.async_copy(src_ref=src, dst_ref=buffer, swizzle=swizzle or None, barrier=barrier, collective=gpu.Dimension.x,
                       **_global_side(mgpu, "tma", smem, row_offset, ()))
        barrier.wait()
        ctx.async_copy(src_ref=buffer, dst_ref=dst, gmem_slice=(gpu.cluster_block_id(gpu.Dimension.x),))
        ctx.await_async_copy(0)

    shape = jax.ShapeDtypeStruct(smem, dtype)
    with _building():
        return mgpu.as_gpu_kernel(kernel, (ctas, 1, 1), (128, 1, 1), jax.ShapeDtypeStruct(gmem_shape, dtype),
                                  jax.ShapeDtypeStruct((ctas, *smem), dtype), (shape, mgpu.TMABarrier()),
                                  cluster=(ctas, 1, 1))


@cache
def _tma_store_kernel(family: str, element_bytes: int, swizzle: int, gmem_shape: tuple[int, ...], smem: tuple[int, ...],
                      row_offset: int, tile: tuple[int, ...]) -> Any:
    """A kernel: an unswizzled TMA load of a shared-memory image (bytes as they lie), then a swizzled TMA store of it
    to the window (or the tiles) of a global array given in and out, whose other bytes must stay as they were."""
    jax = _jax()
    import jax.experimental.mosaic.gpu as mgpu

    dtype = UNSIGNED[element_bytes]

    def kernel(ctx: Any, image: Any, out: Any, scratch: Any) -> None:
        buffer, barrier = scratch
        ctx.async_copy(src_ref=image, dst_ref=buffer, barrier=barrier)
        barrier.wait()
        mgpu.commit_shared()  # what Mosaic asks before a TMA store reads shared memory
        ctx.async_copy(src_ref=buffer, dst_ref=out, swizzle=swizzle or None, **_global_side(mgpu, family, smem, row_offset, tile))
        ctx.await_async_copy(0)

    shape = jax.ShapeDtypeStruct(smem, dtype)
    with _building():
        return mgpu.as_gpu_kernel(kernel, (1, 1, 1), (128, 1, 1), shape, (), (shape, mgpu.TMABarrier()),
                                  inout_shape=(jax.ShapeDtypeStruct(gmem_shape, dtype),))


@cache
def _wgmma_kernel(dtype_name: str, swizzle: int, m: int, k: int, n: int, b_major: str = "mn", a_from: str = "smem",
                  a_major: str = "k") -> Any:
    """A kernel: A through TMA into swizzled (64, S) tiles (K-major), or from A transposed into (8, S) tiles with M
    contiguous (MN-major), or from global memory into registers in Mosaic's WGMMA layout; B through TMA into swizzled
    (S, S) tiles (MN-major) or, from B transposed, (8, S) tiles with K contiguous (K-major); the transposed forms as
    Mosaic's own tests lay them; one wgmma chain, D stored."""
    jax = _jax()
    import jax.experimental.mosaic.gpu as mgpu
    import jax.numpy as jnp
    from jax._src.lib.mlir import ir
    from jax._src.lib.mlir.dialects import nvvm
    from jax.experimental.mosaic.gpu import fragmented_array as fa

    dtype = jnp.dtype(JAX_TYPES[dtype_name])
    tile = swizzle // dtype.itemsize
    signed = True if dtype_name == "s8" else None  # Mosaic's s8 wgmma takes signed A and a signed s32 accumulator

    def kernel(ctx: Any, a: Any, b: Any, out: Any, scratch: Any) -> None:
        a_smem, b_smem, barriers = scratch
        if a_from == "smem":
            a_transform: Any = mgpu.TileTransform((64, tile))
            if a_major == "mn":  # A^T (k, m) in (8, S) tiles, the grid of tiles transposed to (m, k)
                a_transform = (mgpu.TileTransform((8, tile)), mgpu.TransposeTransform((1, 0, 2, 3)))
            ctx.async_copy(src_ref=a, dst_ref=a_smem, swizzle=swizzle, gmem_transform=a_transform, barrier=barriers[0])
        if b_major == "mn":
            b_transform: Any = mgpu.TileTransform((tile, tile))
        else:  # B^T (n, k) in (8, S) tiles, the grid of tiles transposed to (k, n)
            b_transform = (mgpu.TileTransform((8, tile)), mgpu.TransposeTransform((1, 0, 2, 3)))
        ctx.async_copy(src_ref=b, dst_ref=b_smem, swizzle=swizzle, gmem_transform=b_transform, barrier=barriers[1])
        if a_from == "smem":
            barriers[0].wait()
        barriers[1].wait()
        if a_from == "registers":
            layout = fa.WGMMA_LAYOUT_8BIT if dtype.itemsize == 1 else fa.WGMMA_LAYOUT
            lhs = fa.FragmentedArray.load_untiled(a, layout=layout, optimized=False, is_signed=signed)
        else:
            lhs = a_smem if a_major == "k" else mgpu.memref_transpose(a_smem, (0, 1, 3, 2))
        rhs = b_smem if b_major == "mn" else mgpu.memref_transpose(b_smem, (0, 1, 3, 2))
        accumulator = ir.IntegerType.get_signless(32) if signed else ir.F32Type.get()
        acc = mgpu.wgmma(mgpu.WGMMAAccumulator.zero(m=m, n=n, dtype=accumulator, is_signed=signed), lhs, rhs,
                         swizzle=swizzle)
        nvvm.wgmma_commit_group_sync_aligned()
        nvvm.wgmma_wait_group_sync_aligned(0)
        acc.value.store_untiled(out, optimized=False)  # to global memory: thread by thread

    sds = jax.ShapeDtypeStruct
    b_tiles = (k // tile, n // tile, tile, tile) if b_major == "mn" else (k // tile, n // 8, 8, tile)
    b_global = (k, n) if b_major == "mn" else (n, k)
    a_tiles = (m // 64, k // tile, 64, tile) if a_major == "k" else (m // tile, k // 8, 8, tile)
    a_global = (m, k) if a_major == "k" else (k, m)
    scratch = (sds(a_tiles, dtype), sds(b_tiles, dtype), mgpu.TMABarrier(2))
    with _building():
        return mgpu.as_gpu_kernel(kernel, (1, 1, 1), (128, 1, 1), (sds(a_global, dtype), sds(b_global, dtype)),
                                  sds((m, n), jnp.int32 if signed else jnp.float32), scratch)
