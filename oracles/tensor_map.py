"""Which tiled tensor maps the CUDA driver must accept: the documented requirements of ``cuTensorMapEncodeTiled``.

Each rule below is a sentence of the function's documentation (CUDA driver API, ``cuda.h``: "The parameters passed
are bound to the following requirements"), quoted in a one-line comment, except the rules marked *observed*: what
an H100 did where the text is silent, each with its evidence in ``docs/results/``. An encoding that breaks no rule
is one the driver must accept; one that breaks a rule, one it must refuse (``CUDA_ERROR_INVALID_VALUE``).
"""

from __future__ import annotations

from dataclasses import dataclass

# CUtensorMapDataType: each type's size in bytes (cuda.h's enum comments), for the types with a byte size
DATA_TYPE_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 4, 11: 4, 12: 4}
DATA_TYPE_NAMES = ("UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "FLOAT32", "FLOAT64", "BFLOAT16",
                   "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ")
FLOAT_TYPES = frozenset({6, 7, 8, 9, 10, 11, 12})  # FLOAT16 .. TFLOAT32_FTZ: the types a NaN fill is for
INTERLEAVES = ("NONE", "16B", "32B")
SWIZZLES = ("NONE", "32B", "64B", "128B", "128B_ATOM_32B", "128B_ATOM_32B_FLIP_8B", "128B_ATOM_64B")
SWIZZLE_BYTES = (0, 32, 64, 128, 128, 128, 128)  # the span each swizzle's inner box row must fit
L2_PROMOTIONS = ("NONE", "L2_64B", "L2_128B", "L2_256B")
OOB_FILLS = ("NONE", "NAN_REQUEST_ZERO_FMA")
BOX_BYTES_LIMIT = {9: 233_472}  # observed, per compute capability major: 228 KiB, an sm_90 SM's shared memory
ATOM_SWIZZLES = frozenset({4, 5, 6})  # the 128-byte swizzles of 32- and 64-byte atomicity (PTX ISA 5.5.7's sub-modes)


@dataclass(frozen=True)
class TiledEncoding:
    """The arguments of ``cuTensorMapEncodeTiled`` (enums as their values), the tensor map's address aside."""

    data_type: int
    global_address: int
    global_dims: tuple[int, ...]
    global_strides: tuple[int, ...]  # bytes, dims 1.. (rank - 1 values)
    box_dims: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: int = 0
    swizzle: int = 0
    l2_promotion: int = 0
    oob_fill: int = 0

    @property
    def rank(self) -> int:
        return len(self.global_dims)

    @property
    def global_bytes(self) -> int:
        """Bytes from the global address to the tensor's end: the outermost stride times its dim (a row, at rank 1)."""
        if self.rank == 1:
            return self.global_dims[0] * DATA_TYPE_BYTES[self.data_type]
        return self.global_strides[-1] * self.global_dims[-1]


def encoding_problems(e: TiledEncoding, compute_capability: tuple[int, int]) -> list[tuple[str, str]]:
    """The requirements ``e`` breaks on a device of ``compute_capability``, each as (rule, what): empty, the driver
    must accept it."""
    out: list[tuple[str, str]] = []
    size = DATA_TYPE_BYTES.get(e.data_type)
    # "tensorDataType has to be an enum from CUtensorMapDataType" (the packed 4- and 6-bit types are not drawn)
    if size is None:
        out.append(("data type", f"data type {e.data_type} is not a byte-sized CUtensorMapDataType"))
        size = 1
    # "tensorRank must be non-zero and less than or equal to the maximum supported dimensionality of 5"
    if not 1 <= e.rank <= 5:
        out.append(("rank", f"rank {e.rank} is not 1..5"))
    # "If interleave is not CU_TENSOR_MAP_INTERLEAVE_NONE, then tensorRank must additionally be greater than or equal to 3"
    if e.interleave != 0 and e.rank < 3:
        out.append(("interleave rank", f"interleave {INTERLEAVES[e.interleave] if e.interleave < len(INTERLEAVES) else e.interleave} needs rank 3 or more, "
                                          f"not {e.rank}"))
    # "globalAddress ... must be 16 byte aligned"; "When interleave is CU_TENSOR_MAP_INTERLEAVE_32B, globalAddress must be 32 byte aligned"
    align = 32 if e.interleave == 2 else 16
    if e.global_address % align:
        out.append(("global address alignment", f"global address {e.global_address:#x} is not {align}-byte aligned"))
    # "globalDim array ... must be non-zero and less than or equal to 2^32"
    if any(not 1 <= d <= 1 << 32 for d in e.global_dims):
        out.append(("global dims", f"global dims {list(e.global_dims)} must be 1..2^32"))
    # "globalStrides ... must be a multiple of 16 and less than 2^40"; "When interleave is ... 32B, the strides must be a multiple of 32"
    if len(e.global_strides) != max(e.rank - 1, 0):
        out.append(("global stride count", f"{len(e.global_strides)} global strides for rank {e.rank}"))
    stride_align = 32 if e.interleave == 2 else 16
    if any(s % stride_align or not 0 <= s < 1 << 40 for s in e.global_strides):
        out.append(("global strides", f"global strides {list(e.global_strides)} must be multiples of {stride_align} below 2^40"))
    # "boxDim array ... must be non-zero and less than or equal to 256"
    if len(e.box_dims) != e.rank or any(not 1 <= b <= 256 for b in e.box_dims):
        out.append(("box dims", f"box dims {list(e.box_dims)} must be rank-many values 1..256"))
    inner = e.box_dims[0] * size if e.box_dims else 0
    # "When interleave is CU_TENSOR_MAP_INTERLEAVE_NONE, { boxDim[0] * elementSizeInBytes( tensorDataType ) } must be a multiple of 16 bytes"
    if e.interleave == 0 and inner % 16:
        out.append(("inner box bytes", f"the inner box row is {inner} bytes, not a multiple of 16"))
    # observed (H100, driver 580.159.04): with interleave too; 122 of 122 interleaved encodings whose boxDim[0] bytes are
    # not a multiple of 16 refused (108 breaking no documented rule), 671 of 671 whose are accepted
    # (docs/results/interleave-and-clusters-h100.md)
    if e.interleave != 0 and inner % 16:
        out.append(("interleaved inner box bytes", f"the interleaved inner box row is {inner} bytes, not a multiple of 16 (observed)"))
    # "elementStrides array ... must be non-zero and less than or equal to 8"
    if len(e.element_strides) != e.rank or any(not 1 <= t <= 8 for t in e.element_strides):
        out.append(("element strides", f"element strides {list(e.element_strides)} must be rank-many values 1..8"))
    if not 0 <= e.interleave < len(INTERLEAVES) or not 0 <= e.swizzle < len(SWIZZLES):
        out.append(("enum", f"interleave {e.interleave} or swizzle {e.swizzle} is not an enum value"))
        return out
    # "When interleave is CU_TENSOR_MAP_INTERLEAVE_NONE and swizzle is not CU_TENSOR_MAP_SWIZZLE_NONE, the bounding box inner
    # dimension ... must be less than or equal to the swizzle size"
    if e.interleave == 0 and e.swizzle != 0 and inner > SWIZZLE_BYTES[e.swizzle]:
        out.append(("inner box within the swizzle", f"the inner box row of {inner} bytes exceeds the {SWIZZLE_BYTES[e.swizzle]}-byte swizzle {SWIZZLES[e.swizzle]}"))
    # "When interleave is CU_TENSOR_MAP_INTERLEAVE_32B, swizzle must be CU_TENSOR_MAP_SWIZZLE_32B"
    if e.interleave == 2 and e.swizzle != 1:
        out.append(("interleave 32B swizzle", f"interleave 32B needs swizzle 32B, not {SWIZZLES[e.swizzle]}"))
    # "l2Promotion ... must be of type CUtensorMapL2promotion"; "oobFill ... must be of type CUtensorMapFloatOOBfill"
    if not 0 <= e.l2_promotion < len(L2_PROMOTIONS) or not 0 <= e.oob_fill < len(OOB_FILLS):
        out.append(("enum", f"L2 promotion {e.l2_promotion} or OOB fill {e.oob_fill} is not an enum value"))
    # "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA can only be used when tensorDataType represents a floating-point data type"
    if e.oob_fill == 1 and e.data_type not in FLOAT_TYPES:
        out.append(("NaN fill type", f"a NaN out-of-bound fill needs a floating-point type, not {DATA_TYPE_NAMES[e.data_type] if e.data_type in DATA_TYPE_BYTES else e.data_type}"))
    # observed: the elements a box takes, floor(boxDim[i] / elementStrides[i]) in every dim (the innermost's stride
    # counted too, though the text says it is ignored), times the element size, fit 228 KiB on an H100: 0 of 33,810
    # documented-valid encodings misjudged, and the boundaries found by sweeping box dims (docs/results/tensor-maps.md)
    limit = BOX_BYTES_LIMIT.get(compute_capability[0])
    if limit and len(e.box_dims) == len(e.element_strides) and all(t > 0 for t in e.element_strides):
        taken = size
        for b, t in zip(e.box_dims, e.element_strides):
            taken *= b // t
        if taken > limit:
            out.append(("box bytes", f"the box takes {taken} bytes, more than the {limit} (observed) of compute capability {compute_capability[0]}.x"))
    # observed: the atomicity sub-modes are refused below compute capability 10.0 (every one of 10,958,914 tma.swizzle
    # cases on an H100, docs/results/throughput.md; the driver's text does not say so)
    if e.swizzle in ATOM_SWIZZLES and compute_capability < (10, 0):
        out.append(("atomicity compute capability", f"swizzle {SWIZZLES[e.swizzle]} needs compute capability 10.0 (observed), not {compute_capability[0]}.{compute_capability[1]}"))
    return out
