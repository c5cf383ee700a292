"""The code-generation algorithms of Section 5 on linear layouts, and the bank-conflict model.

- ``contiguous_registers``: the largest vectorisation of a distributed layout (5.1).
- ``conversion_plan``: how a conversion A -> B moves data (5.4): registers only, warp
  shuffles (with the shuffle rounds of Figure 4), or shared memory.
- ``vectorisation``: the widest ld/st.shared a register layout allows on a memory layout (5.3).
- ``wavefronts``: Lemma 9.4, with the threads of one 128-byte transaction as in 5.4.
- ``bank_conflicts``: exact per-wavefront conflicts, by enumerating one warp's accesses.
- ``optimal_swizzle``: the memory layout of 5.4/9.2, and ``lemma_9_5_bound`` to check it.
- ``holders``: which thread stores each element of a distributed layout (the right inverse, slack variables zero).

Vectors of the logical tensor are bit-packed ints (first dim in the low bits), as in ``f2``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

import numpy as np

from layoutfuzz.oracles import f2
from layoutfuzz.oracles.linear_layout import LayoutError, LinearLayout

REGISTER, LANE, WARP, OFFSET = "register", "lane", "warp", "offset"
BANKS, BANK_BYTES, WAVEFRONT_BYTES, MAX_VECTOR_BITS = 32, 4, 128, 128


def flat_columns(layout: LinearLayout, in_dim: str) -> list[int]:
    """The images of one input dim's bits as packed tensor vectors."""
    return list(layout.dim_columns(in_dim))


def span_dim(vectors: Sequence[int]) -> int:
    return f2.rank([v for v in vectors if v])


def intersection_dim(a: Sequence[int], b: Sequence[int]) -> int:
    """dim(span(a) ∩ span(b)) = dim a + dim b - dim(a + b)."""
    return span_dim(a) + span_dim(b) - span_dim(list(a) + list(b))


def complement(vectors: Sequence[int], dim: int) -> list[int]:
    """Unit vectors completing ``vectors`` to a basis of F2^dim (lowest bits first)."""
    basis = f2.EchelonBasis.of([v for v in vectors if v])
    out = []
    for k in range(dim):
        if basis.insert(1 << k, 0, len(out) + 64):
            out.append(1 << k)
    return out


# ---- 5.1 ----------------------------------------------------------------------------------


def contiguous_registers(layout: LinearLayout, order: Sequence[int] | None = None) -> int:
    """Largest u with L_Reg^-1(i) = i for i < u (5.1): leading registers that walk the tensor's
    elements 1, 2, 4, ... in memory order (``order`` fastest dim first; default last dim fastest)."""
    names = list(layout.out_dim_names)
    order = list(range(len(names) - 1, -1, -1)) if order is None else list(order)
    memory = layout.transpose_outs([names[d] for d in order])
    count = 0
    for column in memory.dim_columns(REGISTER):
        if column != 1 << count:
            break
        count += 1
    return 1 << count


# ---- 5.4: conversions ---------------------------------------------------------------------


@dataclass(frozen=True)
class ConversionPlan:
    """How ``convert_layout`` A -> B must move data, and the warp-shuffle parameters of 5.4."""

    kind: str  # "none", "register", "shuffle" or "shared"
    vector: int  # |V|: log2 of elements per shuffle (shuffles only)
    common_lanes: int  # |I|
    exchanged_lanes: int  # |G|
    rounds: int  # 2^|R| shuffle rounds


def _trivial_over(cvt: LinearLayout, dim: str) -> bool:
    """``cvt`` is the identity on ``dim`` and no other input dim reaches ``dim``'s output."""
    if dim not in cvt.in_dim_names:
        return True
    i = cvt.out_dim_names.index(dim)
    for name, bases in cvt.in_dims:
        for k, b in enumerate(bases):
            want = [0] * len(b)
            if name == dim:
                want[i] = 1 << k
                if list(b) != want:
                    return False
            elif b[i]:
                return False
    return cvt.in_dim_size(dim) == cvt.out_dim_size(dim)


def conversion_plan(a: LinearLayout, b: LinearLayout, vector_bits: int = 32, elem_bits: int = 32) -> ConversionPlan:
    """The plan for converting distributed layout ``a`` to ``b`` (same tensor), 5.4."""
    cvt = a.invert_and_compose(b)  # B^-1 ∘ A with slack variables zero: A = B ∘ cvt
    if a == b:
        return ConversionPlan("none", 0, 0, 0, 1)
    if _trivial_over(cvt, WARP) and _trivial_over(cvt, LANE):
        return ConversionPlan("register", 0, 0, 0, 1)
    if not _trivial_over(cvt, WARP):
        return ConversionPlan("shared", 0, 0, 0, 1)
    a_reg, b_reg = set(flat_columns(a, REGISTER)) - {0}, set(flat_columns(b, REGISTER)) - {0}
    a_thr, b_thr = flat_columns(a, LANE), flat_columns(b, LANE)
    common = sorted(a_reg & b_reg)
    v = common[: max(0, (vector_bits // elem_bits).bit_length() - 1)]
    inter = [x for x in a_thr if x and x in b_thr]
    e = sorted(x for x in a_thr if x and x not in inter)
    f = sorted(x for x in b_thr if x and x not in inter)
    g = [x ^ y for x, y in zip(e, f)]
    dim = sum(s.bit_length() - 1 for _, s in a.out_dims)
    rest = complement(v + inter + g, dim)
    return ConversionPlan("shuffle", len(v), len(inter), len(g), 1 << len(rest))


# ---- 5.3 / 9.2: shared memory access --------------------------------------------------------


def to_offsets(shared: LinearLayout, dist: LinearLayout) -> LinearLayout:
    """S^-1 ∘ L: register/lane/warp -> shared-memory offset, registers that copy others removed."""
    regs = [b for b in dict(dist.in_dims).get(REGISTER, ()) if any(b)]
    dist = LinearLayout(tuple((n, tuple(regs) if n == REGISTER else bs) for n, bs in dist.in_dims), dist.out_dims)
    return dist.invert_and_compose(shared)


def vectorisation(cvt: LinearLayout, elem_bits: int) -> int:
    """log2 of the widest ld/st.shared: largest k with 2^k elements <= 128 bits such that offsets
    1..2^(k-1) are register images (any register order, 5.3's P_Reg) and nothing else touches
    those offset bits (the left division by the identity tile exists, Theorem 5.1)."""
    regs = list(cvt.dim_columns(REGISTER))
    others = [c for n in cvt.in_dim_names if n != REGISTER for c in cvt.dim_columns(n)]
    k = 0
    while (2 << k) * elem_bits <= MAX_VECTOR_BITS and (1 << k) in regs:
        units = {1 << j for j in range(k + 1)}
        if any(x & ((2 << k) - 1) for x in [r for r in regs if r not in units] + others):
            break
        k += 1
    return k


def bank_bits(v: int, elem_bits: int, limit: int) -> int:
    """b: log2 of the vectors of 2^v elements that fill one 128-byte wavefront (at most ``limit``)."""
    return min(max(0, (WAVEFRONT_BYTES * 8 // ((1 << v) * elem_bits)).bit_length() - 1), limit)


def transaction_lanes(lanes: Sequence[int], v: int, elem_bits: int) -> tuple[int, list[int]]:
    """(n, the lanes of one transaction): vectors of n = 2^v w / 4 > 1 banks split the warp into n
    128-byte transactions by its last log2(n) lane vectors (5.4's A_Bank)."""
    n = max(1, (1 << v) * elem_bits // 8 // BANK_BYTES)
    return n, list(lanes[: len(lanes) - (n.bit_length() - 1)])


@dataclass(frozen=True)
class SharedAccess:
    """One warp's ld/st.shared of ``dist`` on ``shared``: vector width, bank split and conflicts."""

    vector_log2: int  # v
    bank_bits: int  # b
    phases: int  # n: 128-byte transactions per vectorised instruction (>= 1)
    lemma_c: int  # Lemma 9.4's c, over the lanes of one transaction
    wavefronts_per_phase: int  # exact, from the accesses
    bank_conflicts: int  # wavefronts_per_phase - 1: Triton's "excess accesses per wavefront"


def shared_access(shared: LinearLayout, dist: LinearLayout, elem_bits: int) -> SharedAccess:
    """Lemma 9.4 and the exact count for ``dist`` reading/writing ``shared`` (elements of ``elem_bits``)."""
    if shared.out_dims != dist.out_dims:
        raise LayoutError(f"shared {list(shared.out_dims)} and distributed {list(dist.out_dims)} cover different tensors")
    cvt = to_offsets(shared, dist)
    total_bits = shared.total_in_bits
    v = vectorisation(cvt, elem_bits)
    b = bank_bits(v, elem_bits, total_bits - v)
    phases, bank_lanes = transaction_lanes(cvt.dim_columns(LANE), v, elem_bits)
    vec_idx = [1 << j for j in range(v)] + [1 << j for j in range(v + b, total_bits)]
    c = 1 << intersection_dim(vec_idx, bank_lanes)
    exact = _wavefronts_per_phase(cvt, v, elem_bits, len(bank_lanes))
    return SharedAccess(v, b, phases, c, exact, exact - 1)


def _wavefronts_per_phase(cvt: LinearLayout, v: int, elem_bits: int, phase_lane_bits: int) -> int:
    """Max over instructions and transactions of the busiest bank's distinct 4-byte words."""
    return max(_busiest_bank(words) for _, words in _transactions(cvt, v, elem_bits, phase_lane_bits))


def _busiest_bank(words: np.ndarray) -> int:
    """Distinct 4-byte words in the busiest bank of one transaction (``words``: lane x word)."""
    return int(np.bincount(np.unique(words) % BANKS, minlength=BANKS).max())


def _transactions(cvt: LinearLayout, v: int, elem_bits: int, phase_lane_bits: int):
    """Each transaction of one warp's accesses: (its first lane, lane x 4-byte words it touches)."""
    regs = list(cvt.dim_columns(REGISTER))
    vec_regs = [1 << j for j in range(v)]
    others = [r for r in regs if r not in vec_regs]
    lane_offsets = _span_table(list(cvt.dim_columns(LANE)))  # offset of each lane's vector start (linear, from lane 0)
    vec_bytes = max(1, (1 << v) * elem_bits // 8)
    words_per_vec = max(1, vec_bytes // BANK_BYTES)
    per_phase = 1 << phase_lane_bits
    for base in _span_table(others):
        byte = (lane_offsets ^ base) * elem_bits // 8  # lane -> first byte of its vector
        for start in range(0, len(byte), per_phase):
            chunk = byte[start : start + per_phase]
            yield start, np.stack([(chunk >> 2) + w for w in range(words_per_vec)], axis=1)


def busiest_access(shared: LinearLayout, dist: LinearLayout, elem_bits: int) -> tuple[int, np.ndarray]:
    """The transaction of one warp's accesses with the most conflicts: its first lane and the 4-byte
    words each of its lanes touches (bank = word mod 32); what a picture of a bank conflict shows."""
    cvt = to_offsets(shared, dist)
    v = vectorisation(cvt, elem_bits)
    _, bank_lanes = transaction_lanes(cvt.dim_columns(LANE), v, elem_bits)
    return max(_transactions(cvt, v, elem_bits, len(bank_lanes)), key=lambda t: _busiest_bank(t[1]))


def _span_table(vectors: Sequence[int]) -> np.ndarray:
    """All XOR combinations of ``vectors``, index bit k selecting vectors[k]."""
    table = np.zeros(1, dtype=np.int64)
    for x in vectors:
        table = np.concatenate([table, table ^ x])
    return table


# ---- 5.4 / 9.2: optimal swizzling -----------------------------------------------------------


@dataclass(frozen=True)
class Swizzling:
    """The memory layout chosen by 5.4/9.2 and what its optimality rests on."""

    layout: LinearLayout  # offset -> tensor
    vector: tuple[int, ...]
    bank: tuple[int, ...]
    index: tuple[int, ...]
    free: int  # |G| + |C|: the largest conflict-free index space (Lemma 9.5)
    bound: int  # d - max(dim U, dim V) from Lemma 9.5


def optimal_swizzle(a: LinearLayout, b: LinearLayout, elem_bits: int) -> Swizzling:
    """Section 9.2's algorithm for distributed layouts ``a`` and ``b`` of one tensor."""
    if a.out_dims != b.out_dims:
        raise LayoutError("optimal_swizzle needs two layouts of one tensor")
    d = sum(s.bit_length() - 1 for _, s in a.out_dims)
    a_reg = [x for x in flat_columns(a, REGISTER) if x]
    b_reg = set(flat_columns(b, REGISTER))
    common = [x for x in a_reg if x in b_reg]
    max_v = max(0, (MAX_VECTOR_BITS // elem_bits).bit_length() - 1)
    vec = common[:max_v]
    v = len(vec)
    bank_len = bank_bits(v, elem_bits, d - v)
    idx_len = d - v - bank_len
    _, a_bank = transaction_lanes([x for x in flat_columns(a, LANE) if x], v, elem_bits)
    _, b_bank = transaction_lanes([x for x in flat_columns(b, LANE) if x], v, elem_bits)
    e = [x for x in a_bank if x not in b_bank]
    f = [x for x in b_bank if x not in a_bank]
    if len(e) > len(f):
        e, f = f, e
    g = [x ^ y for x, y in zip(e, f)]
    c = complement(vec + a_bank + b_bank, d)
    pool = _independent(vec, g + c)
    index = pool[:idx_len]
    if len(index) < idx_len:  # bank conflicts are unavoidable: add thread vectors of A
        index += _independent(vec + index, a_bank + b_bank + [1 << k for k in range(d)])[: idx_len - len(index)]
    bank = complement(vec + index, d)[:bank_len]
    offsets = vec + bank + index
    if span_dim(offsets) != d:
        raise LayoutError("optimal_swizzle did not reach a basis")  # a bug of this oracle
    layout = LinearLayout.from_columns([(OFFSET, 1 << d)], a.out_dims, offsets)
    return Swizzling(layout, tuple(vec), tuple(bank), tuple(index), len(pool), lemma_9_5_bound(vec + a_bank, vec + b_bank, d))


def _independent(base: Sequence[int], candidates: Sequence[int]) -> list[int]:
    """Candidates that stay independent of ``base`` and of each other, in order."""
    echelon = f2.EchelonBasis.of([x for x in base if x])
    out = []
    for x in candidates:
        if x and echelon.insert(x, 0, 64 + len(out)):
            out.append(x)
    return out


def lemma_9_5_bound(u: Sequence[int], v: Sequence[int], d: int) -> int:
    """Largest dimension of a subspace meeting span(u) ∪ span(v) only in 0: d - max(dim U, dim V)."""
    return d - max(span_dim(u), span_dim(v))


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
