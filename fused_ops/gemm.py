"""The persistent GEMM tile loop, written once. Variants compose these pieces with their own epilogues.

Operands are reached either through TMA descriptors (Hopper; edge tiles are zero-filled by the hardware), built on the
host where the launch allows it, else in the kernel, or through masked plain pointers (the interpreter, and strides
TMA cannot describe). `TMA` is a constexpr, so each launch compiles only one of the paths.
"""

import os

import triton
import triton.language as tl

import iris
from iris.tracing import GEMM, record
from . import config, sync


# Whether the fused variants' persistent kernels let the next kernel launch at their start (programmatic dependent
# launch, iris.launched_early; FUSED_OPS_PDL_NEXT=start) or only as their programs exit (the default). At their start
# it slowed back-to-back GEMMs (results/archive/gemm_probe/), and one-kernel fused calls follow each other directly now
# that their barriers are inside the kernel: the exit trigger ran one_shot, two_shot and fused_sequential faster
# (results/archive/world1_sync_84e6044/), as it does the scatter and reduce kernels that close a two-kernel call
# (results/archive/world1_two_kernel_1376c52/).
NEXT_IN_AT_START = tl.constexpr(os.environ.get("FUSED_OPS_PDL_NEXT", "exit") == "start")


# Whether the tile loop (gemm_kernel, scaled_gemm_kernel, ...) loads its last row and column of tiles as boxes that
# end at the operands' edge rather than past it (FUSED_OPS_EDGE_INSIDE, on by default; 0 for A/B runs): TMA loads
# past an operand's last row cost more than the rows they bring (results/current/gemm/ROUNDS.md, "Rows past the edge"
# and "The tile loop's edge boxes inside the operands"). The tile computes rows already covered by the tile before it
# and stores only its own (c_tile), so no output element is written twice. The all-reduce, all-scatter and
# reduce-scatter fused variants and all-gather's push take it too; all-gather's pull and the MoE variants, which load
# rows through plain pointers, do not.
EDGE_INSIDE = tl.constexpr(config.EDGE_INSIDE)
# Columns are the innermost coordinate of a row-major B's boxes, and TMA faults (illegal instruction) on an innermost
# coordinate that is not 16 bytes into the row: a column origin moved inside is rounded up to 16 elements (16 bytes at
# the narrowest, FP8), so where N is not a multiple of 16 its box still runs up to 15 columns past the edge.
COL_ALIGN = tl.constexpr(16)


@triton.jit
def tile_origin(pid, size, BLOCK: tl.constexpr, INSIDE: tl.constexpr, ALIGN: tl.constexpr = tl.constexpr(1)):
    """First row (or column) of the box that tile `pid` loads along a dimension of `size`: pid * BLOCK, or with INSIDE
    at most size - BLOCK rounded up to a multiple of ALIGN (a dimension shorter than a box has only tile 0, at 0).
    A tile's boxes take theirs from tile_origins."""
    start = pid * BLOCK
    if INSIDE:
        start = tl.minimum(start, tl.cdiv(tl.maximum(size - BLOCK, 0), ALIGN) * ALIGN)
    return start


@triton.jit
def tile_origins(pid_m, pid_n, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INSIDE: tl.constexpr,
                 ROWS_FIXED: tl.constexpr = tl.constexpr(False)):
    """(first row, first column) of tile (pid_m, pid_n)'s boxes, as loaded, scaled and stored alike: tile_origin
    along each dimension, columns COL_ALIGN-aligned; ROWS_FIXED: rows at pid_m * BLOCK_M (A_ROW_PTRS)."""
    return (tile_origin(pid_m, M, BLOCK_M, INSIDE and not ROWS_FIXED),
            tile_origin(pid_n, N, BLOCK_N, INSIDE, COL_ALIGN))


@triton.jit
def tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """Grouped ("super-tile") order: GROUP_M row-tiles share B columns while they are hot in L2."""
    width = GROUP_M * num_pid_n
    first_m = (tile_id // width) * GROUP_M
    size_m = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile_id % width) % size_m
    pid_n = (tile_id % width) // size_m
    return pid_m, pid_n


@triton.jit
def operands(
    A, B,                              # operands: A M x K, B K x N (pointers or descriptors)
    M, N, K,                           # problem size
    stride_am, stride_bk, stride_bn,   # strides, in elements (the K-major ones are 1)
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # tiles
    TMA: tl.constexpr,                 # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
):
    """TMA=1: A and B row-major; TMA=2: B stored transposed (N x K row-major, e.g. an nn.Linear weight's .t()).
    An operand passed as a host-built descriptor (Problem.operands) is used as is: building one here costs every
    program a global write and a proxy fence, 1.5-2.5 us per launch (results/archive/gemm_probe/)."""
    a = A
    b = B
    if TMA:
        if not isinstance(A, tl.tensor_descriptor):
            a = tl.make_tensor_descriptor(A, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
        if not isinstance(B, tl.tensor_descriptor):
            if TMA == 2:
                b = tl.make_tensor_descriptor(B, shape=[N, K], strides=[stride_bn, 1],
                                              block_shape=[BLOCK_N, BLOCK_K])
            else:
                b = tl.make_tensor_descriptor(B, shape=[K, N], strides=[stride_bk, 1],
                                              block_shape=[BLOCK_K, BLOCK_N])
    return a, b


@triton.jit
def gemm_tile(
    a_op, b_op,                                         # operands (gemm.operands)
    pid_m, pid_n,                                       # the output tile
    M, N, K,                                            # problem size
    stride_am, stride_ak, stride_bk, stride_bn,         # A's and B's strides, in elements
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # tiles
    TMA: tl.constexpr,                                  # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    A_ROW_PTRS: tl.constexpr = tl.constexpr(False),     # a_op is a block of BLOCK_M row pointers
    MAX_IMPRECISE: tl.constexpr = tl.constexpr(None),   # FP8: products per promotion to fp32 (None: never)
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (scale_tile); 0: none
    INSIDE: tl.constexpr = tl.constexpr(False),         # edge tiles' boxes moved inside (EDGE_INSIDE, tile_origin)
):
    """fp32 accumulator of one BLOCK_M x BLOCK_N output tile. With A_ROW_PTRS, `a_op` is a block of BLOCK_M row
    pointers (rows may live on different ranks: AllGather+GEMM pulls them through the heap)."""
    return gemm_k_blocks(a_op, b_op, pid_m, pid_n, 0, tl.cdiv(K, BLOCK_K), M, N, K, stride_am, stride_ak, stride_bk,
                         stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA, A_ROW_PTRS, MAX_IMPRECISE, SA, SB, SCALES, INSIDE)


@triton.jit
def gemm_k_blocks(
    a_op, b_op,                                         # operands (gemm.operands)
    pid_m, pid_n,                                       # the output tile
    kb0, kb1,                                           # its K blocks [kb0, kb1)
    M, N, K,                                            # problem size
    stride_am, stride_ak, stride_bk, stride_bn,         # A's and B's strides, in elements
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # tiles
    TMA: tl.constexpr,                                  # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    A_ROW_PTRS: tl.constexpr = tl.constexpr(False),     # a_op is a block of BLOCK_M row pointers
    MAX_IMPRECISE: tl.constexpr = tl.constexpr(None),   # FP8: products per promotion to fp32 (None: never)
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (scale_tile); 0: none
    INSIDE: tl.constexpr = tl.constexpr(False),         # edge tiles' boxes moved inside (EDGE_INSIDE, tile_origin)
):
    """The tile's product over K blocks [kb0, kb1) only (the whole tile: 0, cdiv(K, BLOCK_K)). MAX_IMPRECISE (FP8):
    how many products of K Hopper's FP8 tensor cores may add up in their reduced-precision accumulator before the sum
    is promoted into the fp32 one (None: Triton's default, never; BLOCK_K: once per block, as torch._scaled_mm's
    default, use_fast_accum=False, does). SCALES (FP8 operands of the catalog ops): the product scaled as scale_tile
    says, and promoted once per BLOCK_K whatever MAX_IMPRECISE says; scaling is linear, so split-K slices and atomic
    sums of scaled partials add up to the scaled tile. INSIDE: the tile's rows and columns start at tile_origins (its
    epilogue places them there: c_tile with INSIDE); not with A_ROW_PTRS, whose rows the caller chose."""
    IMPRECISE: tl.constexpr = BLOCK_K if SCALES != 0 else MAX_IMPRECISE
    m0, n0 = tile_origins(pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, INSIDE, A_ROW_PTRS)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if TMA:
        for kk in range(kb0, kb1):
            a = a_op.load([m0, kk * BLOCK_K])
            if TMA == 2:
                b = b_op.load([n0, kk * BLOCK_K]).T
            else:
                b = b_op.load([kk * BLOCK_K, n0])
            acc = tl.dot(a, b, acc, max_num_imprecise_acc=IMPRECISE)
    else:
        rm = m0 + tl.arange(0, BLOCK_M)
        rn = n0 + tl.arange(0, BLOCK_N)
        rk = kb0 * BLOCK_K + tl.arange(0, BLOCK_K)
        if A_ROW_PTRS:
            a_ptrs = a_op[:, None] + rk[None, :] * stride_ak
        else:
            a_ptrs = a_op + rm[:, None] * stride_am + rk[None, :] * stride_ak
        b_ptrs = b_op + rk[:, None] * stride_bk + rn[None, :] * stride_bn
        rk = tl.arange(0, BLOCK_K)
        for kk in range(kb0, kb1):
            k_left = K - kk * BLOCK_K
            a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
            b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc, max_num_imprecise_acc=IMPRECISE)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
    if SCALES != 0:
        acc = scale_tile(acc, SA, SB, m0, n0, M, N, SCALES % 2 == 0, SCALES >= 3)
    return acc


@triton.jit
def scale_tile(acc, SA, SB, row0, col0, M, N, A_ROWS: tl.constexpr, B_COLS: tl.constexpr):
    """acc * scales, the FP8 epilogue of torch._scaled_mm: SA one fp32 per row of A (A_ROWS) or one in all, SB one
    per column of B (B_COLS) or one in all: a tile's few small loads. row0, col0: the tile's first row and column
    (tile_origins). (gemm_k_blocks' SCALES: fp8.scale_mode.)"""
    if A_ROWS:
        rm = row0 + tl.arange(0, acc.shape[0])
        acc = acc * tl.load(SA + rm, mask=rm < M, other=0.0)[:, None]
    else:
        acc = acc * tl.load(SA)
    if B_COLS:
        rn = col0 + tl.arange(0, acc.shape[1])
        acc = acc * tl.load(SB + rn, mask=rn < N, other=0.0)[None, :]
    else:
        acc = acc * tl.load(SB)
    return acc


@triton.jit
def first_unit(base):
    """This program's first unit at or after `base` in the persistent order (unit u runs on program u % programs):
    loops over several groups of units (shards, slices) continue that order across them."""
    programs = tl.num_programs(0)
    return base + (tl.program_id(0) - base % programs + programs) % programs


@triton.jit
def num_units(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT_K: tl.constexpr, WHOLE=0):
    """Work units of a persistent loop: tiles [0, WHOLE) one unit each, every later tile SPLIT_K units, one per slice
    of K (Problem.whole_tiles: WHOLE = 0 splits every tile; the full waves' tiles split only the last wave's)."""
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    if SPLIT_K == 1:
        return tiles
    else:
        return WHOLE + (tiles - WHOLE) * SPLIT_K


@triton.jit
def unit_tile(unit, SPLIT_K: tl.constexpr, WHOLE=0):
    """(tile, slice, last): the tile work unit `unit` belongs to, its slice of K (0 for a whole tile), and whether it
    is the tile's last unit."""
    if SPLIT_K == 1:
        return unit, 0, True
    else:
        j = unit - WHOLE
        split = j >= 0
        s = tl.where(split, j % SPLIT_K, 0)
        tile = tl.where(split, WHOLE + j // SPLIT_K, unit)
        return tile, s, (j < 0) | (s == SPLIT_K - 1)


@triton.jit
def unit_start(tile, SPLIT_K: tl.constexpr, WHOLE=0):
    """The first work unit of `tile` (num_units): a loop over a range of tiles runs units [unit_start(lo),
    unit_start(hi))."""
    if SPLIT_K == 1:
        return tile
    else:
        return tl.where(tile <= WHOLE, tile, WHOLE + (tile - WHOLE) * SPLIT_K)


@triton.jit
def gemm_unit(
    a_op, b_op,                                         # operands (gemm.operands)
    unit,                                               # the work unit (num_units)
    M, N, K,                                            # problem size
    stride_am, stride_ak, stride_bk, stride_bn,         # A's and B's strides, in elements
    PARTIALS, COUNTS,                                   # split-K: the slices' fp32 partials and arrival counts
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TMA: tl.constexpr,                                  # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    SPLIT_K: tl.constexpr, WHOLE=0,                     # split-K: slices per tile; tiles [0, WHOLE) stay whole
    SUM_SLICES: tl.constexpr = tl.constexpr(True),      # False: every slice is done with its own partial sum
    MAX_IMPRECISE: tl.constexpr = tl.constexpr(None),   # FP8: products per promotion to fp32 (None: never)
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (scale_tile); 0: none
    INSIDE: tl.constexpr = tl.constexpr(False),         # edge tiles' boxes moved inside (EDGE_INSIDE, tile_origin)
):
    """(tile, pid_m, pid_n, acc, done) of work unit `unit` (num_units) of the M x N output's tiles in grouped order
    (unit_acc)."""
    tile, s, _ = unit_tile(unit, SPLIT_K, WHOLE)
    pid_m, pid_n = tile_coords(tile, tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    acc, done = unit_acc(a_op, b_op, unit, tile, s, pid_m, pid_n, M, N, K, stride_am, stride_ak, stride_bk,
                         stride_bn, PARTIALS, COUNTS, BLOCK_M, BLOCK_N, BLOCK_K, TMA, SPLIT_K, WHOLE, SUM_SLICES,
                         MAX_IMPRECISE, SA, SB, SCALES, INSIDE)
    return tile, pid_m, pid_n, acc, done


@triton.jit
def unit_acc(
    a_op, b_op,                                         # operands (gemm.operands)
    unit, tile, s, pid_m, pid_n,                        # the work unit: its tile, slice of K, tile coordinates
    M, N, K,                                            # problem size
    stride_am, stride_ak, stride_bk, stride_bn,         # A's and B's strides, in elements
    PARTIALS, COUNTS,                                   # split-K: the slices' fp32 partials and arrival counts
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # tiles
    TMA: tl.constexpr,                                  # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    SPLIT_K: tl.constexpr, WHOLE=0,                     # split-K: slices per tile; tiles [0, WHOLE) stay whole
    SUM_SLICES: tl.constexpr = tl.constexpr(True),      # False: every slice is done with its own partial sum
    MAX_IMPRECISE: tl.constexpr = tl.constexpr(None),   # FP8: products per promotion to fp32 (None: never)
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (scale_tile); 0: none
    INSIDE: tl.constexpr = tl.constexpr(False),         # edge tiles' boxes moved inside (EDGE_INSIDE, tile_origin)
):
    """(acc, done) of work unit `unit`, of `tile` at (pid_m, pid_n): the whole tile, or slice s of its K blocks. A
    split tile's slices meet in PARTIALS (fp32) and the last slice to finish adds them up, in slice order, so the
    result does not depend on which one finished last: `done` is true for that one only, and only its `acc` is the
    tile. Nobody waits, so any schedule of units is safe. SUM_SLICES=False: every slice is `done` with its own partial
    sum (a variant that adds tiles atomically adds the slices too)."""
    if SPLIT_K == 1:
        acc = gemm_tile(a_op, b_op, pid_m, pid_n, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, BLOCK_M,
                        BLOCK_N, BLOCK_K, TMA, False, MAX_IMPRECISE, SA, SB, SCALES, INSIDE)
        done = True
    else:
        split = unit >= WHOLE
        k_blocks = tl.cdiv(K, BLOCK_K)
        per = tl.where(split, tl.cdiv(k_blocks, SPLIT_K), k_blocks)
        acc = gemm_k_blocks(a_op, b_op, pid_m, pid_n, s * per, tl.minimum(s * per + per, k_blocks), M, N, K,
                            stride_am, stride_ak, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA, False,
                            MAX_IMPRECISE, SA, SB, SCALES, INSIDE)
        done = unit >= 0
        if SUM_SLICES:
            if split:
                acc, done = sum_slices(acc, tile - WHOLE, s, PARTIALS, COUNTS, SPLIT_K)
    return acc, done


# A tile split into more slices than this adds them with fp32 atomics into one partial (its first slice's, zero between
# calls) instead of each slice storing its own for the last one to read back in order: there one program reads SPLIT_K
# partials serially, which cost more than more slices saved (K >> M x N: 32 slices in order ran slower than 16,
# results/current/gemm/edge_eb7d296/; by atomics 33 slices ran faster than either, final_e9cb8e8/). At 2-3 slices of
# 128-row tiles neither sum pays (1024x2560x2880: whole tiles beat both). The atomics' order varies from call to call,
# so such a tile's fp32 sum may differ in its last bits; up to SERIAL_SLICES slices the sum is in slice order.
SERIAL_SLICES = tl.constexpr(8)


@triton.jit
def sum_slices(acc, tile, s, PARTIALS, COUNTS, SPLIT_K: tl.constexpr):
    """Publish slice s of split tile number `tile` (counting split tiles only), count it in; the last one in sums all
    slices and re-arms the count (and, beyond SERIAL_SLICES, zeroes the atomic partial) for the next call (each call
    brings the count from 0 to SPLIT_K: never stale)."""
    BLOCK_M: tl.constexpr = acc.shape[0]
    BLOCK_N: tl.constexpr = acc.shape[1]
    offs = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    base = PARTIALS + tile.to(tl.int64) * (SPLIT_K * BLOCK_M * BLOCK_N)
    if SPLIT_K > SERIAL_SLICES:
        tl.atomic_add(base + offs, acc, sem="relaxed", scope="gpu")
    else:
        tl.store(base + s * (BLOCK_M * BLOCK_N) + offs, acc)
    tl.debug_barrier()  # every thread's stores, then one release (acq_rel: the last one also acquires the others')
    done = tl.atomic_add(COUNTS + tile, 1, sem="acq_rel", scope="gpu") == SPLIT_K - 1
    if done:
        if SPLIT_K > SERIAL_SLICES:
            acc = tl.load(base + offs, cache_modifier=".cg")
            tl.store(base + offs, tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32))
        else:
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for j in tl.static_range(SPLIT_K):
                acc += tl.load(base + j * (BLOCK_M * BLOCK_N) + offs, cache_modifier=".cg")
        tl.store(COUNTS + tile, 0)
    return acc, done


@triton.jit
def call_slot(P, epoch, slot_size):
    """This call's half of a double buffer of 2 x slot_size elements (the call's epoch parity). The epoch is read on
    the device, so replays of a captured CUDA graph alternate too."""
    return P + (epoch % 2) * slot_size


def pad_weight(w, multiple=64):
    """w (K x N, row-major) with the same shape and values, in storage whose rows start every `multiple` elements
    (a view of K x ceil(N / multiple) x multiple): call it once per weight, where it is created or loaded, not per
    GEMM (it copies w). Why: a B operand whose rows are not 128-byte aligned (N x 2 bytes % 128 != 0: N = 1000, 3000,
    5000...) makes every TMA box row straddle two 128-byte lines; on one H100 4096x1000x8192 ran 0.77x torch.matmul
    with B contiguous and 1.00x with the padded stride, 4096x3000x4096 0.74 -> 0.99x (results/current/gemm/
    edge_eb7d296/). A weight stored as nn.Linear stores it (N x K, passed as w.t()) needs no padding where K is
    aligned: that layout ran 0.98-0.99x. Without it, large calls copy B into aligned rows themselves, per call
    (fused_ops/problem.py pads_b: 4096x1000x8192 0.83x instead of 1.02x). A K-major w (w.t() of an N x K weight, as
    FP8 takes it) stays K-major, its rows of K padded: FP8 with K x 1 byte not a multiple of 32 (K = 3696) ran
    0.78-0.83x torch._scaled_mm as given and 0.99-1.18x padded (fused_ops/local_gemm.py sector_copies, which copies per
    call where that pays). Cost: the padding's elements of memory; none per call. Not collective."""
    import torch

    if w.dim() != 2:
        raise ValueError(f"pad_weight: expected a 2-D K x N weight, got shape {tuple(w.shape)}")
    if multiple < 1 or (multiple * w.element_size()) % 16:
        raise ValueError(f"pad_weight: multiple={multiple} elements must be a positive multiple of 16 bytes "
                         f"({16 // w.element_size()} elements of {w.dtype})")
    k, n = w.shape
    aligned_rows = w.stride(1) == 1 and w.stride(0) % multiple == 0
    k_major = w.stride(0) == 1 and w.stride(1) != 1  # nn.Linear's weight.t() (TMA=2; FP8's only layout)
    if (aligned_rows or (k_major and w.stride(1) % multiple == 0)) and w.data_ptr() % 16 == 0:
        return w
    if k_major:  # stays K-major: its rows of K padded
        buf = torch.empty(n, -(-k // multiple) * multiple, dtype=w.dtype, device=w.device)
        return copy_rows(w.t(), buf[:, :k]).t()
    buf = torch.empty(k, -(-n // multiple) * multiple, dtype=w.dtype, device=w.device)
    return copy_rows(w, buf[:, :n])


@triton.jit
def copy_rows_kernel(SRC, DST, rows, cols, src_stride, dst_stride, VEC: tl.constexpr, BLOCK_R: tl.constexpr,
                     BLOCK_C: tl.constexpr):
    """DST = SRC, both row-major with rows `*_stride` elements apart (strides and cols multiples of VEC, said so to
    the compiler as `(x // VEC) * VEC`, so that it moves VEC elements per access where Triton's own divisibility-by-16
    hint does not reach: a row stride of 1000 bf16)."""
    r = (tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r[:, None] < rows) & (c[None, :] < (cols // VEC) * VEC)
    src = SRC + r[:, None] * ((src_stride // VEC) * VEC) + c[None, :]
    dst = DST + r[:, None] * ((dst_stride // VEC) * VEC) + c[None, :]
    tl.store(dst, tl.load(src, mask=mask), mask=mask)


def copy_rows(src, dst):
    """dst = src (2-D): 16 bytes per access where the row strides and addresses allow (at least 8), one launch (a
    torch copy_ into such a view moved FP8 rows at well under a TB/s); elsewhere torch's copy_. Not collective."""
    if (src.device.type != "cuda" or src.stride(1) != 1 or dst.stride(1) != 1
            or copy_vec(src, dst) * src.element_size() < 8):
        dst.copy_(src)  # not a layout this kernel serves better (rows of odd length: torch's own copy, as before)
        return dst
    rows, cols = src.shape
    block_c = 64 * (16 // src.element_size())  # 1 KiB of a row per program row
    copy_rows_kernel[(triton.cdiv(rows, 8), triton.cdiv(cols, block_c))](src, dst, rows, cols, src.stride(0),
                                                                         dst.stride(0), VEC=copy_vec(src, dst),
                                                                         BLOCK_R=8, BLOCK_C=block_c, num_warps=4)
    return dst


def copy_vec(src, dst):
    """Elements per access of copy_rows_kernel: the most, up to 16 bytes' worth, that divide the row length, both
    row strides and both addresses."""
    vec = 16 // src.element_size()
    while vec > 1 and any(v % vec for v in (src.shape[1], src.stride(0), dst.stride(0), src.data_ptr() //
                                            src.element_size(), dst.data_ptr() // dst.element_size())):
        vec //= 2
    return vec


def store_vec(c, *ints):
    """The C_VEC of a kernel storing into `c` (element offsets `ints`: its row stride, N, col0, slot size...): the
    largest power of two, at most 16 bytes' worth of elements, dividing them all and c's address. Triton marks an
    integer argument aligned only when it divides by 16, so at N = 3000 (not 16, but 8 | N) the epilogue compiles to
    one 2-byte store per element (128 st.global.b16 per thread of a 128x256 tile instead of 16 st.global.v4); the
    kernel rounds what C_VEC divides (c_tile) and stores 16 bytes at a time again. Host-side, free. Measured on one
    H100 it moved those shapes by no more than the run-to-run noise (+-3%, results/current/gemm/): the store is not
    what costs them most."""
    vec = 16 // c.element_size()
    while vec > 1 and (c.data_ptr() % (vec * c.element_size()) or any(int(v) % vec for v in ints)):
        vec //= 2
    return vec


@triton.jit
def aligned(x, VEC: tl.constexpr):
    """x, known to the compiler as a multiple of VEC (the host checked that it is: store_vec)."""
    if VEC > 1:
        x = x // VEC * VEC
    return x


@triton.jit
def c_tile(
    C,                                              # output
    pid_m, pid_n,                                   # the tile
    M, N,                                           # size of the output block
    stride_cm, stride_cn, col0,                     # C's strides, the block's first column
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,   # tile
    VEC: tl.constexpr = tl.constexpr(1),            # N, stride_cm, col0 divide by VEC
    INSIDE: tl.constexpr = tl.constexpr(False),     # the tile's accumulator starts at tile_origin (gemm_k_blocks)
):
    """Pointers and mask of an output tile of an M x N block that starts at column col0 of C. VEC: N, stride_cm and
    col0 are multiples of VEC (store_vec), so rows store VEC elements at a time. INSIDE: the accumulator's rows and
    columns start at tile_origins; the mask keeps only the tile's own (those before pid * BLOCK are the previous
    tile's)."""
    N = aligned(N, VEC)
    stride_cm = aligned(stride_cm, VEC)
    col0 = aligned(col0, VEC)
    m0, n0 = tile_origins(pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, INSIDE)
    rm = m0 + tl.arange(0, BLOCK_M)
    rn = n0 + tl.arange(0, BLOCK_N)
    ptrs = C + rm[:, None] * stride_cm + (col0 + rn)[None, :] * stride_cn
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if INSIDE:
        mask = mask & (rm[:, None] >= pid_m * BLOCK_M) & (rn[None, :] >= pid_n * BLOCK_N)
    return ptrs, mask


@triton.jit
def gemm_loop(
    A, B,                                               # operands: A M x K, B K x N (pointers or descriptors)
    M, N, K,                                            # problem size
    stride_am, stride_ak, stride_bk, stride_bn,         # A's and B's strides, in elements
    C, stride_cm, stride_cn, col0,                      # output: C[:, col0:col0+N], strides in elements
    flags, epoch,                                       # per-tile flags, this call's epoch
    cur_rank, world_size, heap_bases,                   # this rank, the ranks, the symmetric heap
    start, step,                                        # this program's units: start, start+step, ...
    SIGNAL: tl.constexpr,                               # per finished tile: "local" flag, "arrive" everywhere, or none
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TMA: tl.constexpr,                                  # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    TRACE=None, TRACING: tl.constexpr = tl.constexpr(False),  # event trace (iris.tracing)
    PARTIALS=None, COUNTS=None,                         # split-K: the slices' fp32 partials and arrival counts
    SPLIT_K: tl.constexpr = tl.constexpr(1), WHOLE=0,   # split-K: slices per tile; tiles [0, WHOLE) stay whole
    C_VEC: tl.constexpr = tl.constexpr(1),              # store width of C (store_vec)
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (scale_tile); 0: none
    INSIDE: tl.constexpr = tl.constexpr(False),         # edge tiles' boxes moved inside (EDGE_INSIDE, tile_origin)
):
    """Work units start, start+step, ... of C[:, col0:col0+N] = A @ B (tiles, or slices of K: num_units), each
    finished tile stored locally. Then, per tile: SIGNAL="local": set this rank's flags[tile] = the call's epoch;
    "arrive": add 1 to flags[tile] on every rank. C_VEC: store_vec of C's stride, N and col0."""
    a_op, b_op = operands(A, B, M, N, K, stride_am, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA)
    for unit in range(start, num_units(M, N, BLOCK_M, BLOCK_N, SPLIT_K, WHOLE), step):
        record(TRACE, GEMM, unit_tile(unit, SPLIT_K, WHOLE)[0], TRACING)
        tile, pid_m, pid_n, acc, done = gemm_unit(a_op, b_op, unit, M, N, K, stride_am, stride_ak, stride_bk,
                                                  stride_bn, PARTIALS, COUNTS, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                                                  TMA, SPLIT_K, WHOLE, SA=SA, SB=SB, SCALES=SCALES, INSIDE=INSIDE)
        if done:
            ptrs, mask = c_tile(C, pid_m, pid_n, M, N, stride_cm, stride_cn, col0, BLOCK_M, BLOCK_N, C_VEC, INSIDE)
            tl.store(ptrs, acc.to(C.dtype.element_ty), mask=mask)
        record(TRACE, -GEMM, tile, TRACING)
        if done:
            if SIGNAL == "local":
                iris.signal(flags + tile, epoch, cur_rank, cur_rank, heap_bases)
            elif SIGNAL == "arrive":
                for i in range(world_size):
                    iris.signal(flags + tile, 1, cur_rank, (cur_rank + i) % world_size, heap_bases, op="add")


@triton.jit
def gemm_kernel(
    A, B,                                               # operands: A M x K, B K x N (pointers or descriptors)
    M, N, K,                                            # problem size
    stride_am, stride_ak, stride_bk, stride_bn,         # A's and B's strides, in elements
    C, stride_cm, stride_cn, col0,                      # output: C[:, col0:col0+N], strides in elements
    flags,                                              # per-tile flags (SIGNAL)
    SYNC, slot_size,                                    # sync.py words; C's double-buffer slot size (0: none)
    cur_rank, world_size, heap_bases,                   # this rank, the ranks, the symmetric heap
    SIGNAL: tl.constexpr,                               # per finished tile: "local" flag, "arrive" everywhere, or none
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TMA: tl.constexpr,                                  # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    TRACE=None, TRACING: tl.constexpr = tl.constexpr(False),  # event trace (iris.tracing)
    PDL: tl.constexpr = tl.constexpr(False),            # programmatic dependent launch (iris.launched_early)
    PARTIALS=None, COUNTS=None,                         # split-K: the slices' fp32 partials and arrival counts
    SPLIT_K: tl.constexpr = tl.constexpr(1), WHOLE=0,   # split-K: slices per tile; tiles [0, WHOLE) stay whole
    ROLE: tl.constexpr = tl.constexpr(0),               # its part in a call of several kernels (sync.start)
    C_VEC: tl.constexpr = tl.constexpr(1),              # store width of C (store_vec)
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (scale_tile); 0: none
    INSIDE: tl.constexpr = EDGE_INSIDE,                 # edge tiles' boxes moved inside (tile_origin)
):
    """The persistent GEMM alone, one kernel of a call of several (ROLE: its part in the call's synchronization,
    fused_ops/sync.py); C is the call's slot of a double buffer when slot_size is not 0. C_VEC: store_vec(C, its row
    stride, N, col0, slot_size)."""
    iris.launched_early(PDL, LET_NEXT_IN=False)
    epoch = sync.start(SYNC, ROLE, cur_rank, world_size, heap_bases)
    C = call_slot(C, epoch, aligned(slot_size, C_VEC))
    gemm_loop(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, C, stride_cm, stride_cn, col0, flags, epoch,
              cur_rank, world_size, heap_bases, tl.program_id(0), tl.num_programs(0), SIGNAL, BLOCK_M, BLOCK_N,
              BLOCK_K, GROUP_M, TMA, TRACE, TRACING, PARTIALS, COUNTS, SPLIT_K, WHOLE, C_VEC, SA, SB, SCALES, INSIDE)
    sync.finish(SYNC, epoch, ROLE, cur_rank, world_size, heap_bases)


@triton.jit
def scaled_gemm_kernel(
    A, B, SA, SB, C,                                    # operands: FP8 A M x K, B K x N, fp32 scales; C M x N
    M, N, K,                                            # problem size
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,  # strides, in elements
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TMA: tl.constexpr,                                  # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    ROW_SCALES: tl.constexpr,                           # SA per row of A, SB per column of B; else one each
    PARTIALS=None, COUNTS=None,                         # split-K: the slices' fp32 partials and arrival counts
    SPLIT_K: tl.constexpr = tl.constexpr(1), WHOLE=0,   # split-K: slices per tile; tiles [0, WHOLE) stay whole
    C_VEC: tl.constexpr = tl.constexpr(1),              # store width of C (store_vec)
    MAX_IMPRECISE: tl.constexpr = tl.constexpr(None),   # FP8: products per promotion to fp32 (None: never)
    SCALED: tl.constexpr = tl.constexpr(True),          # False: C = A @ B (16-bit operands; SA, SB not read)
    PDL: tl.constexpr = tl.constexpr(False),            # programmatic dependent launch (iris.launched_early)
    INSIDE: tl.constexpr = EDGE_INSIDE,                 # edge tiles' boxes moved inside (tile_origin)
):
    """C = (A @ B) * scales, the persistent tile loop on FP8 (e4m3) operands with an fp32 accumulator: per-tensor scales
    (SA, SB one fp32 each) or row-wise ones (ROW_SCALES: SA one per row of A, SB one per column of B), applied to the
    accumulator in the epilogue, as torch._scaled_mm does (fused_ops/fp8.py); or, SCALED=False, the plain GEMM of
    fused_ops.matmul (fused_ops/local_gemm.py)."""
    iris.launched_early(PDL, LET_NEXT_IN=False)
    a_op, b_op = operands(A, B, M, N, K, stride_am, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA)
    for unit in range(tl.program_id(0), num_units(M, N, BLOCK_M, BLOCK_N, SPLIT_K, WHOLE), tl.num_programs(0)):
        tile, pid_m, pid_n, acc, done = gemm_unit(a_op, b_op, unit, M, N, K, stride_am, stride_ak, stride_bk,
                                                  stride_bn, PARTIALS, COUNTS, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                                                  TMA, SPLIT_K, WHOLE, True, MAX_IMPRECISE, INSIDE=INSIDE)
        if done:
            ptrs, mask = c_tile(C, pid_m, pid_n, M, N, stride_cm, stride_cn, 0, BLOCK_M, BLOCK_N, C_VEC, INSIDE)
            if SCALED:
                row0, col0 = tile_origins(pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, INSIDE)
                acc = scale_tile(acc, SA, SB, row0, col0, M, N, ROW_SCALES, ROW_SCALES)
            tl.store(ptrs, acc.to(C.dtype.element_ty), mask=mask)
