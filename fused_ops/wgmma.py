"""The GEMM alone on Hopper, warp-specialized, written in Gluon (stock Triton's explicit dialect: TMA, mbarriers,
warpgroup MMAs and warp specialization as the kernel says, not as the compiler's pipeliner decides).

Why a second kernel next to the tile loop of gemm.py:
- Overlap across tiles: one load warp issues every K block of every tile of its program into a ring of stages and
  runs ahead across tiles, so the next tile's operands land during this tile's epilogue, and C leaves by
  asynchronous TMA stores.
- Tiles the tile loop cannot express: one to four consumer warpgroups each compute 64 rows of a tile, so 192-row
  tiles fill one wave where 128-row ones need two (TMA boxes must be powers of two: A comes as one 64-row box per
  consumer); and swap-AB tiles (run(swap=True)), the same kernel on C's transpose: B's columns as the MMAs' rows, A's
  rows as their N (16-256), for widths along M that 64-row warpgroups pad (decode rows, 256-row tiles of 64 columns);
  and widths between powers of two (run(rem=R)): 128 + 32 = 160 columns of B wide (or, swapped, 144 rows of A),
  where such tiles fill a wave that powers of two leave partly idle; one MMA that wide from inline PTX where A and B
  are K-major (fused_ops/wide_mma.py), else a second MMA of N = R per block.
- FP8 with precise accumulation (torch._scaled_mm's default) adds the tensor cores' reduced-precision partial sums
  into fp32 every block of K, after waiting for the block's MMAs. In gemm.py's loop all warps of a program wait at
  once (Triton emits `wgmma.wait_group 0` there, and each block has CTA-wide barriers); overlapping inside one
  warpgroup makes ptxas serialize every MMA (C7514). Here the consumers are synchronized only through the ring's
  mbarriers: while one waits for its block and adds it, the others' MMAs run.

Scope: one GPU; A row-major, B row- or column-major (FP8: column-major, K-major, as torch._scaled_mm takes it; the
kernel itself reads A in either order and writes C in either, which swap-AB uses),
16-byte aligned bases and row strides (TMA zero-fills the edges); bf16/fp16 or FP8 e4m3 with fp32 scales per tensor
or per row / column; bf16/fp16/fp32 out; whole tiles. fused_ops/config.py (wgmma_config) says where it is the
default and which tile; elsewhere (few tiles, most decode rows beyond one wave of swapped tiles, strides TMA cannot
describe) gemm.py's tile loop runs, and the CPU backend's interpreter runs only that.
"""

import warnings

import torch
import triton
import triton.language as tl

from . import wide_mma
from .gemm import store_vec

def _major_minor():
    return tuple(int(x) for x in triton.__version__.split(".")[:2])


TRITON = _major_minor()
try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                                   warpgroup_mma_wait)
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    cta_barrier = getattr(gl, "thread_barrier", None) or gl.barrier  # Triton 3.7 renamed it barrier()
    # Triton 3.8 reinterprets shared memory only as a view of the same bytes: there a smaller view is a slice of one
    # (the kernel as measured, on Triton 3.6, takes the smaller view directly)
    WHOLE_VIEWS = gl.constexpr(TRITON >= (3, 8))
    _GLUON = TRITON >= (3, 6)  # 3.5's Gluon has the Hopper API but a warp_specialize of other arguments
except ImportError:  # Triton without Gluon's Hopper API (before 3.5)
    _GLUON = False  # gemm.py's tile loop serves every call


def available():
    """Whether this Triton has the Gluon Hopper API the kernel is written for (TMA, mbarriers, warpgroup MMAs,
    warp_specialize as 3.6 takes it): Triton 3.6 on."""
    return _GLUON


# The Triton versions under which the kernel's GPU tests ran (tests/gpu_logs/). Gluon's API moves between releases:
# later ones are compile-checked for sm_90a on the CPU (tests/test_wgmma.py's compile cases), not run.
GPU_VALIDATED_TRITON = ("3.6",)
_noted = []


def _note_untested_triton():
    """Say once per process that this Triton's build of the kernel has not run on a GPU here."""
    version = "%d.%d" % _major_minor()
    if version not in GPU_VALIDATED_TRITON and not _noted:
        _noted.append(version)
        warnings.warn(f"fused_ops: the Gluon GEMM kernel compiles under Triton {triton.__version__} but its GPU tests "
                      f"ran under Triton {', '.join(GPU_VALIDATED_TRITON)} only; `pytest tests/test_wgmma.py` on this "
                      f"GPU checks it, and kernel='tile_loop' runs the tile loop instead", RuntimeWarning, stacklevel=3)


if _GLUON:
    @gluon.constexpr_function
    def mma_layout(block_m, block_n, bits, num_warps):
        """The accumulator layout: warps stacked along M in warpgroups of 4 (64 rows each), then along N; one
        instruction as wide as a warp's share of N (at most 256)."""
        warps = [4, 1]
        while warps[0] * warps[1] < num_warps:
            if block_m > 16 * warps[0]:
                warps[0] *= 2
            else:
                warps[1] *= 2
        n = min(256, block_n // warps[1])
        return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=warps, instr_shape=[16, n, 256 // bits])

    @gluon.constexpr_function
    def sums_layout(shape):
        """Shared layout of TURNS's fp32 sums handed between consumers (the MMAs' own swizzle for fp32)."""
        return gl.NVMMASharedLayout.get_default_for(list(shape), gl.float32)

    @gluon.jit
    def tile_coords(tile, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
        """Grouped order, as gemm.tile_coords: GROUP_M row-tiles share B's columns while they are hot in L2."""
        width = GROUP_M * num_pid_n
        first_m = (tile // width) * GROUP_M
        size_m = gl.minimum(num_pid_m - first_m, GROUP_M)
        return first_m + (tile % width) % size_m, (tile % width) // size_m

    @gluon.jit
    def inside(start, size, extent, INSIDE: gl.constexpr):
        """A box's first row or column: where the box would reach past the operand's last one, moved back so it ends
        there (INSIDE; never before 0): its rows are computed twice, by identical values, but TMA never loads past
        the edge, which ran 2.5x slower (results/current/gemm/ROUNDS.md, "Rows past the edge")."""
        if INSIDE:
            start = gl.maximum(gl.minimum(start, extent - size), 0)
        return start

    @gluon.jit
    def unit_coords(unit, num_pid_m, num_pid_n, per, K, BLOCK_K: gl.constexpr, GROUP_M: gl.constexpr):
        """(pid_m, pid_n, first K block, end K block) of a unit of work: a tile's slice of K (split-K; tiles vary
        fastest, so the programs of one slice share its stretch of A and B in L2)."""
        tiles = num_pid_m * num_pid_n
        pid_m, pid_n = tile_coords(unit % tiles, num_pid_m, num_pid_n, GROUP_M)
        k0 = (unit // tiles) * per
        return pid_m, pid_n, k0, gl.minimum(k0 + per, gl.cdiv(K, BLOCK_K))

    @gluon.jit
    def ws_loads(
        a_desc, b_desc, b2_desc,                        # operands (b2: REM's columns of B)
        a_bufs, b_bufs, b2_bufs, ready, empty,          # the ring's stages and barriers
        M, N, K,                                        # problem size
        GROUP_M: gl.constexpr, NUM_BUFFERS: gl.constexpr, A_T: gl.constexpr, B_T: gl.constexpr,
        BOXES: gl.constexpr, SPLIT_K: gl.constexpr, INSIDE: gl.constexpr, REM: gl.constexpr,
        WIDE: gl.constexpr,                             # B's BLOCK_N + REM rows a stage in one run (fused_ops/wide_mma)
    ):
        """The load warp of wgmma_ws_kernel: every K block of every (tile, slice of K) of this program into the ring
        (A as BOXES boxes of 64 rows: one per consumer, or one that two consumers take turns on), each stage once its
        consumers have released it."""
        HALF_M: gl.constexpr = a_desc.block_type.shape[1] if A_T else a_desc.block_type.shape[0]
        BLOCK_M: gl.constexpr = BOXES * HALF_M
        BLOCK_K: gl.constexpr = a_desc.block_type.shape[0] if A_T else a_desc.block_type.shape[1]
        BLOCK_N: gl.constexpr = b_desc.block_type.shape[0] if B_T else b_desc.block_type.shape[1]
        R: gl.constexpr = b2_desc.block_type.shape[0]  # WIDE (B K-major): REM's box, REM / R of them a stage
        REM_PARTS: gl.constexpr = REM // R if REM > 0 and WIDE else 1
        num_pid_m = gl.cdiv(M, BLOCK_M)
        num_pid_n = gl.cdiv(N, BLOCK_N + REM)
        per = gl.cdiv(gl.cdiv(K, BLOCK_K), SPLIT_K)
        p = 0
        for unit in range(gl.program_id(0), num_pid_m * num_pid_n * SPLIT_K, gl.num_programs(0)):
            pid_m, pid_n, k0, k1 = unit_coords(unit, num_pid_m, num_pid_n, per, K, BLOCK_K, GROUP_M)
            col0 = inside(pid_n * (BLOCK_N + REM), BLOCK_N, N, INSIDE)
            if REM > 0:
                col2 = inside(pid_n * (BLOCK_N + REM) + BLOCK_N, REM, N, INSIDE)
            for kk in range(k0, k1):
                s = p % NUM_BUFFERS
                mbarrier.wait(empty.index(s), ((p // NUM_BUFFERS) & 1) ^ 1)  # a fresh barrier passes parity 1
                bar = ready.index(s)
                if REM > 0:  # (WIDE: REM's columns may come as several boxes, REM_PARTS)
                    mbarrier.expect(bar, BOXES * a_desc.block_type.nbytes + b_desc.block_type.nbytes
                                    + REM_PARTS * b2_desc.block_type.nbytes)
                else:
                    mbarrier.expect(bar, BOXES * a_desc.block_type.nbytes + b_desc.block_type.nbytes)
                for h in gl.static_range(BOXES):
                    row0 = inside(pid_m * BLOCK_M + h * HALF_M, HALF_M, M, INSIDE)
                    if A_T:
                        tma.async_copy_global_to_shared(a_desc, [kk * BLOCK_K, row0], bar,
                                                        a_bufs.index(s * BOXES + h))
                    else:
                        tma.async_copy_global_to_shared(a_desc, [row0, kk * BLOCK_K], bar,
                                                        a_bufs.index(s * BOXES + h))
                if WIDE:  # a stage (K-major B): (BLOCK_N + REM) / R boxes of R rows (R: REM's box), the first
                    # BLOCK_N as one box
                    G: gl.constexpr = (BLOCK_N + REM) // R
                    if WHOLE_VIEWS:  # no view wider than its box: the first BLOCK_N as R-row boxes too
                        for j in gl.static_range(BLOCK_N // R):
                            tma.async_copy_global_to_shared(b2_desc, [col0 + j * R, kk * BLOCK_K], bar,
                                                            b_bufs.index(s * G + j))
                    else:  # a view from the first box over the next ones
                        first = b_bufs.index(s * G)._reinterpret(b_desc.dtype, b_desc.block_type.shape,
                                                                 b_desc.layout)
                        tma.async_copy_global_to_shared(b_desc, [col0, kk * BLOCK_K], bar, first)
                    for j in gl.static_range(REM_PARTS):
                        tma.async_copy_global_to_shared(b2_desc, [col2 + j * R, kk * BLOCK_K], bar,
                                                        b_bufs.index(s * G + BLOCK_N // R + j))
                elif B_T:
                    tma.async_copy_global_to_shared(b_desc, [col0, kk * BLOCK_K], bar, b_bufs.index(s))
                else:
                    tma.async_copy_global_to_shared(b_desc, [kk * BLOCK_K, col0], bar, b_bufs.index(s))
                if REM > 0 and not WIDE:
                    if B_T:
                        tma.async_copy_global_to_shared(b2_desc, [col2, kk * BLOCK_K], bar, b2_bufs.index(s))
                    else:
                        tma.async_copy_global_to_shared(b2_desc, [kk * BLOCK_K, col2], bar, b2_bufs.index(s))
                p += 1

    @gluon.jit
    def scaled(acc, SA, SB, row0, col0, M, N, SCALES: gl.constexpr):
        """acc (rows row0.., columns col0.. of C) times FP8's scales: one each (SCALES 1), or per row of A and column
        of B (2); as is for 16-bit (0)."""
        if SCALES == 1:
            acc = acc * (gl.load(SA) * gl.load(SB))
        elif SCALES == 2:
            rm = row0 + gl.arange(0, acc.shape[0], layout=gl.SliceLayout(1, acc.type.layout))
            rn = col0 + gl.arange(0, acc.shape[1], layout=gl.SliceLayout(0, acc.type.layout))
            acc = acc * gl.load(SA + rm, mask=rm < M, other=0.0)[:, None]
            acc = acc * gl.load(SB + rn, mask=rn < N, other=0.0)[None, :]
        return acc

    @gluon.jit
    def store_tile(acc, c_smem, c_desc, first, row0, col0, C_T: gl.constexpr):
        """acc to C's rows row0.. and columns col0.. by an asynchronous TMA store (C_T: C stored transposed; first:
        split-K's slice, its rows of the partials as stored), once this warpgroup's previous store has left c_smem."""
        tma.store_wait(pendings=0)
        if C_T:
            c_smem.store(gl.permute(acc.to(c_desc.dtype), (1, 0)))
        else:
            c_smem.store(acc.to(c_desc.dtype))
        send_tile(c_smem, c_desc, first, row0, col0, C_T)

    @gluon.jit
    def send_tile(c_smem, c_desc, first, row0, col0, C_T: gl.constexpr):
        """c_smem, as this warpgroup stored it, to C's rows row0.. and columns col0.. by an asynchronous TMA store."""
        fence_async_shared()
        if C_T:
            tma.async_copy_shared_to_global(c_desc, [first + col0, row0], c_smem)
        else:
            tma.async_copy_shared_to_global(c_desc, [first + row0, col0], c_smem)

    @gluon.jit
    def store_chunks(acc, J0: gl.constexpr, WIDTH: gl.constexpr, c_smem, c_desc, SA, SB, first, row0, col0, M, N,
                     SCALES: gl.constexpr, C_T: gl.constexpr):
        """Columns J0.. J0 + WIDTH of a wide accumulator (wide_mma's chunks) to C's rows row0.. and columns col0..,
        scaled, chunk by chunk through c_smem, by one asynchronous TMA store (as store_tile)."""
        CH: gl.constexpr = acc[0].shape[1]
        lc: gl.constexpr = acc[0].type.layout
        if SCALES == 1:  # FP8's scales read once for every chunk
            both = gl.load(SA) * gl.load(SB)
        elif SCALES == 2:
            rm = row0 + gl.arange(0, acc[0].shape[0], layout=gl.SliceLayout(1, lc))
            rows = gl.load(SA + rm, mask=rm < M, other=0.0)[:, None]
        tma.store_wait(pendings=0)
        for j in gl.static_range(WIDTH // CH):
            part = acc[J0 // CH + j]
            if SCALES == 1:
                part = part * both
            elif SCALES == 2:
                rn = col0 + j * CH + gl.arange(0, CH, layout=gl.SliceLayout(0, lc))
                part = part * rows * gl.load(SB + rn, mask=rn < N, other=0.0)[None, :]
            part = part.to(c_desc.dtype)
            if C_T:
                c_smem.slice(j * CH, CH, dim=0).store(gl.permute(part, (1, 0)))
            else:
                c_smem.slice(j * CH, CH, dim=1).store(part)
        send_tile(c_smem, c_desc, first, row0, col0, C_T)

    @gluon.jit
    def wide_blocks(a_bufs, ready, empty, c, k0, k1, W: gl.constexpr, OFF_A: gl.constexpr, OFF_B: gl.constexpr,
                    NUM_BUFFERS: gl.constexpr, BOXES: gl.constexpr, BOX: gl.constexpr, PROMOTE: gl.constexpr):
        """This consumer's 64 x W sums of blocks k0..k1 of K, one MMA W wide a k step (fused_ops/wide_mma; A and B
        K-major, the ring at shared offsets OFF_A and OFF_B, B's stages W rows deep). PROMOTE: each block's sum waited
        for and added into fp32; else one block's MMAs stay in flight while the next one's issue. c: the first block's
        place in the ring's sequence."""
        BITS: gl.constexpr = a_bufs.dtype.primitive_bitwidth
        ROW: gl.constexpr = a_bufs.type.shape[2] * BITS // 8  # a block of K in bytes: one swizzled row
        A_BOX: gl.constexpr = a_bufs.type.shape[1] * ROW
        B_STAGE: gl.constexpr = W * ROW
        base = wide_mma.smem_base()
        zero = wide_mma.zeros(W, BITS)
        acc = zero
        for kk in range(k0, k1):
            q = c + kk - k0
            s = q % NUM_BUFFERS
            mbarrier.wait(ready.index(s), (q // NUM_BUFFERS) & 1)
            a_addr = base + OFF_A + (s * BOXES + BOX) * A_BOX
            b_addr = base + OFF_B + s * B_STAGE
            if PROMOTE:
                acc = wide_mma.add(acc, wide_mma.block_sum(zero, a_addr, b_addr, a_bufs.dtype, ROW))
                mbarrier.arrive(empty.index(s), count=1)
            else:
                acc = wide_mma.mma(acc, a_addr, b_addr, kk - k0, a_bufs.dtype, ROW, 1)
                mbarrier.arrive(empty.index((q + NUM_BUFFERS - 1) % NUM_BUFFERS), count=1, pred=kk > k0)
        if not PROMOTE:
            acc = wide_mma.wait(acc)
            mbarrier.arrive(empty.index((c + k1 - k0 + NUM_BUFFERS - 1) % NUM_BUFFERS), count=1)
        return acc

    @gluon.jit
    def promoted_pairs(acc, acc2, zero, zero2, a_bufs, b_bufs, b2_bufs, ready, empty, c, k0, k1,
                       NUM_BUFFERS: gl.constexpr, BOXES: gl.constexpr, BOX: gl.constexpr, A_T: gl.constexpr,
                       B_T: gl.constexpr, REM: gl.constexpr):
        """(acc, acc2) plus blocks k0..k1 of K with precise FP8 accumulation (PROMOTE 2), two blocks at a time: both
        blocks' MMAs issued into sums of their own, the first's sums added into fp32 while the second's MMAs run.
        REM: each block's second MMA, REM more columns of B, into acc2 alike (acc2, zero2: placeholders without).
        Nothing stays in flight past a pair (ptxas serializes every MMA where a sum read is carried across the loop:
        C7514). c: the first block's place in the ring's sequence."""
        for kk in range(k0, k1 - 1, 2):
            q = c + kk - k0
            s = q % NUM_BUFFERS
            s1 = (q + 1) % NUM_BUFFERS
            mbarrier.wait(ready.index(s), (q // NUM_BUFFERS) & 1)
            a0 = stage_a(a_bufs, s, BOXES, BOX, A_T)
            p0 = warpgroup_mma(a0, stage_b(b_bufs, s, B_T), zero, use_acc=False, is_async=True)
            if REM > 0:
                r0 = warpgroup_mma(a0, stage_b(b2_bufs, s, B_T), zero2, use_acc=False, is_async=True)
            mbarrier.wait(ready.index(s1), ((q + 1) // NUM_BUFFERS) & 1)
            a1 = stage_a(a_bufs, s1, BOXES, BOX, A_T)
            p1 = warpgroup_mma(a1, stage_b(b_bufs, s1, B_T), zero, use_acc=False, is_async=True)
            if REM > 0:
                r1 = warpgroup_mma(a1, stage_b(b2_bufs, s1, B_T), zero2, use_acc=False, is_async=True)
                p0, r0, p1, r1 = warpgroup_mma_wait(2, deps=(p0, r0, p1, r1))  # the first block's MMAs are done
                acc2 += r0
            else:
                p0, p1 = warpgroup_mma_wait(1, deps=(p0, p1))
            acc += p0
            mbarrier.arrive(empty.index(s), count=1)
            if REM > 0:
                p1, r1 = warpgroup_mma_wait(0, deps=(p1, r1))
                acc2 += r1
            else:
                p1 = warpgroup_mma_wait(0, deps=(p1, ))
            acc += p1
            mbarrier.arrive(empty.index(s1), count=1)
        if (k1 - k0) % 2 == 1:  # an odd count: the last block alone
            q = c + k1 - 1 - k0
            s = q % NUM_BUFFERS
            mbarrier.wait(ready.index(s), (q // NUM_BUFFERS) & 1)
            a0 = stage_a(a_bufs, s, BOXES, BOX, A_T)
            p0 = warpgroup_mma(a0, stage_b(b_bufs, s, B_T), zero, use_acc=False, is_async=True)
            if REM > 0:
                r0 = warpgroup_mma(a0, stage_b(b2_bufs, s, B_T), zero2, use_acc=False, is_async=True)
                p0, r0 = warpgroup_mma_wait(0, deps=(p0, r0))
                acc2 += r0
            else:
                p0 = warpgroup_mma_wait(0, deps=(p0, ))
            acc += p0
            mbarrier.arrive(empty.index(s), count=1)
        return acc, acc2

    @gluon.jit
    def stage_a(a_bufs, s, BOXES: gl.constexpr, BOX: gl.constexpr, A_T: gl.constexpr):
        """This consumer's box of A in stage s, as the MMA reads it."""
        a = a_bufs.index(s * BOXES + BOX)
        if A_T:
            a = a.permute((1, 0))
        return a

    @gluon.jit
    def stage_b(b_bufs, s, B_T: gl.constexpr):
        """B's box in stage s, as the MMA reads it."""
        b = b_bufs.index(s)
        if B_T:
            b = b.permute((1, 0))
        return b

    @gluon.jit
    def ws_consumer(
        HALF: gl.constexpr,                             # which 64 rows of each tile this warpgroup computes
        c_smem,                                         # its staging tile for C (REM's columns too, in turn)
        ops,                                            # the ring, C's descriptor, scales and sizes (wgmma_ws_kernel)
        GROUP_M: gl.constexpr, NUM_BUFFERS: gl.constexpr,
        A_T: gl.constexpr,                              # A stored K x M (M-major)
        B_T: gl.constexpr,                              # B stored N x K (K-major)
        C_T: gl.constexpr,                              # C stored N x M (M-major)
        SCALES: gl.constexpr,                           # 0: none; 1: per-tensor; 2: row-wise
        PROMOTE: gl.constexpr,                          # FP8: add each block's sum into fp32 (2: in pairs)
        CONSUMERS: gl.constexpr,                        # consumer warpgroups (64 rows each)
        TURNS: gl.constexpr,                            # two consumers, one 64-row tile: alternate blocks of K
        SPLIT_K: gl.constexpr,                          # slices of K per tile (> 1: c_desc holds fp32 partials)
        INSIDE: gl.constexpr,                           # edge boxes moved back inside the operands (inside())
        REM: gl.constexpr,                              # a second MMA of REM more columns of B per tile (16-bit)
        WIDE: gl.constexpr,                             # ... or one MMA BLOCK_N + REM wide (fused_ops/wide_mma),
        OFF_A: gl.constexpr, OFF_B: gl.constexpr,       # the ring's shared offsets it reads the operands at
    ):
        """A consumer warpgroup of wgmma_ws_kernel: waits for a block, multiplies its 64 rows of A by B and releases
        the stage once its MMAs are done. PROMOTE: waits for them at every block and adds the block's sum into fp32
        (the other warpgroups' MMAs keep the tensor cores busy meanwhile, so they drift into turns; PROMOTE 2: two
        blocks at a time, promoted_pairs); else one block's MMAs stay in flight while the next block's issue.
        TURNS: the two consumers share the tile's 64 rows and take alternate blocks of K, each into its own sum, the
        second handing its sum to the first through shared memory at the tile's end (so precise FP8 keeps one
        warpgroup's MMAs running while the other adds, at 64-row tiles)."""
        a_bufs, b_bufs, b2_bufs, ready, empty, c_desc, c2_desc, SA, SB, M, N, K, M_PAD, red, red2, handoff = ops
        BOXES: gl.constexpr = 1 if TURNS else CONSUMERS  # 64-row boxes of A per stage
        BOX: gl.constexpr = 0 if TURNS else HALF  # ... and this consumer's
        STEP: gl.constexpr = 2 if TURNS else 1  # TURNS: every other block of the ring's sequence
        HALF_M: gl.constexpr = a_bufs.type.shape[2] if A_T else a_bufs.type.shape[1]
        BLOCK_N: gl.constexpr = b_bufs.type.shape[1] if B_T else b_bufs.type.shape[2]
        BLOCK_K: gl.constexpr = a_bufs.type.shape[1] if A_T else a_bufs.type.shape[2]
        layout: gl.constexpr = mma_layout(HALF_M, BLOCK_N, a_bufs.dtype.primitive_bitwidth, 4)
        num_pid_m = gl.cdiv(M, BOXES * HALF_M)
        num_pid_n = gl.cdiv(N, BLOCK_N + REM)
        per = gl.cdiv(gl.cdiv(K, BLOCK_K), SPLIT_K)
        zero = gl.zeros([HALF_M, BLOCK_N], gl.float32, layout)
        t = 0  # TURNS: tiles handed over so far (the handoff barriers' phase)
        if REM > 0 and not WIDE:  # (WIDE: REM may be no power of two, 96)
            layout2: gl.constexpr = mma_layout(HALF_M, REM, a_bufs.dtype.primitive_bitwidth, 4)
            zero2 = gl.zeros([HALF_M, REM], gl.float32, layout2)
        if REM > 0:  # C's REM columns staged in the front of C's staging tile
            if WHOLE_VIEWS:  # a view of all of it, then its first rows
                C2: gl.constexpr = c2_desc.block_type.shape
                C2_ALL: gl.constexpr = (c_smem.type.shape[0] * c_smem.type.shape[1] * c_smem.dtype.primitive_bitwidth
                                        // (C2[1] * c2_desc.dtype.primitive_bitwidth))
                c2_smem = c_smem._reinterpret(c2_desc.dtype, [C2_ALL, C2[1]], c2_desc.layout).slice(0, C2[0])
            else:
                c2_smem = c_smem._reinterpret(c2_desc.dtype, c2_desc.block_type.shape, c2_desc.layout)
        c = 0
        if WIDE:  # B's stages hold BLOCK_N + REM rows as boxes of REM's box: BLOCK_N is C's staging tile's width
            BN: gl.constexpr = c_smem.type.shape[0] if C_T else c_smem.type.shape[1]
            num_pid_n = gl.cdiv(N, BN + REM)
            for unit in range(gl.program_id(0), num_pid_m * num_pid_n * SPLIT_K, gl.num_programs(0)):
                pid_m, pid_n, k0, k1 = unit_coords(unit, num_pid_m, num_pid_n, per, K, BLOCK_K, GROUP_M)
                wide = wide_blocks(a_bufs, ready, empty, c, k0, k1, BN + REM, OFF_A, OFF_B, NUM_BUFFERS, BOXES, BOX,
                                   PROMOTE)
                c += k1 - k0
                row0 = inside((pid_m * BOXES + BOX) * HALF_M, HALF_M, M, INSIDE)  # as the load warp loaded them
                col0 = inside(pid_n * (BN + REM), BN, N, INSIDE)
                col2 = inside(pid_n * (BN + REM) + BN, REM, N, INSIDE)
                first = (unit // (num_pid_m * num_pid_n)) * M_PAD  # split-K: this slice's rows of the fp32 partials
                store_chunks(wide, 0, BN, c_smem, c_desc, SA, SB, first, row0, col0, M, N, SCALES, C_T)
                R: gl.constexpr = c2_desc.block_type.shape[0] if C_T else c2_desc.block_type.shape[1]
                for j in gl.static_range(REM // R):  # REM's columns: one box, or (no power of two) R-wide ones
                    store_chunks(wide, BN + j * R, R, c2_smem, c2_desc, SA, SB, first, row0, col2 + j * R, M, N,
                                 SCALES, C_T)
        else:
            for unit in range(gl.program_id(0), num_pid_m * num_pid_n * SPLIT_K, gl.num_programs(0)):
                pid_m, pid_n, k0, k1 = unit_coords(unit, num_pid_m, num_pid_n, per, K, BLOCK_K, GROUP_M)
                acc = zero
                if REM > 0:
                    acc2 = zero2
                skip = 0
                if TURNS:  # the blocks whose place in the ring's sequence has this consumer's parity: with an even
                    skip = (c + HALF) % 2  # number of stages, the same stages every time, so neither consumer can wait
                    # on a stage a lap behind the other's (a phase apart)
                if PROMOTE == 2 and REM > 0:
                    acc, acc2 = promoted_pairs(acc, acc2, zero, zero2, a_bufs, b_bufs, b2_bufs, ready, empty, c, k0, k1,
                                               NUM_BUFFERS, BOXES, BOX, A_T, B_T, REM)
                elif PROMOTE == 2:
                    acc, _ = promoted_pairs(acc, acc, zero, zero, a_bufs, b_bufs, b_bufs, ready, empty, c, k0, k1,
                                            NUM_BUFFERS, BOXES, BOX, A_T, B_T, REM)
                else:
                    for kk in range(k0 + skip, k1, STEP):
                        q = c + kk - k0  # the block's place in the ring's sequence
                        s = q % NUM_BUFFERS
                        mbarrier.wait(ready.index(s), (q // NUM_BUFFERS) & 1)
                        a = stage_a(a_bufs, s, BOXES, BOX, A_T)
                        b = stage_b(b_bufs, s, B_T)
                        if REM > 0:
                            b2 = stage_b(b2_bufs, s, B_T)
                        if PROMOTE:
                            part = warpgroup_mma(a, b, zero, use_acc=False, is_async=True)
                            if REM > 0:
                                part2 = warpgroup_mma(a, b2, zero2, use_acc=False, is_async=True)
                                part, part2 = warpgroup_mma_wait(0, deps=(part, part2))
                                acc2 += part2
                            else:
                                part = warpgroup_mma_wait(0, deps=(part, ))
                            acc += part
                            mbarrier.arrive(empty.index(s), count=1)
                        elif TURNS:  # each block's MMAs waited for: the stage is this consumer's alone
                            acc = warpgroup_mma(a, b, acc, use_acc=kk > k0 + skip, is_async=True)
                            if REM > 0:
                                acc2 = warpgroup_mma(a, b2, acc2, use_acc=kk > k0 + skip, is_async=True)
                                acc, acc2 = warpgroup_mma_wait(0, deps=(acc, acc2))
                            else:
                                acc = warpgroup_mma_wait(0, deps=(acc, ))
                            mbarrier.arrive(empty.index(s), count=1)
                        elif REM > 0:  # two MMAs a block: wait until only this block's two are in flight
                            acc = warpgroup_mma(a, b, acc, use_acc=kk > k0, is_async=True)
                            acc2 = warpgroup_mma(a, b2, acc2, use_acc=kk > k0, is_async=True)
                            acc, acc2 = warpgroup_mma_wait(2, deps=(acc, acc2))
                            mbarrier.arrive(empty.index((q + NUM_BUFFERS - 1) % NUM_BUFFERS), count=1, pred=kk > k0)
                        else:
                            acc = warpgroup_mma(a, b, acc, use_acc=kk > k0, is_async=True)
                            acc = warpgroup_mma_wait(1, deps=(acc, ))  # the previous block's MMAs are done: release it
                            mbarrier.arrive(empty.index((q + NUM_BUFFERS - 1) % NUM_BUFFERS), count=1, pred=kk > k0)
                c += k1 - k0
                if REM > 0 and not PROMOTE and not TURNS:
                    acc, acc2 = warpgroup_mma_wait(0, deps=(acc, acc2))
                    mbarrier.arrive(empty.index((c + NUM_BUFFERS - 1) % NUM_BUFFERS), count=1)
                elif not PROMOTE and not TURNS:
                    acc = warpgroup_mma_wait(0, deps=(acc, ))
                    mbarrier.arrive(empty.index((c + NUM_BUFFERS - 1) % NUM_BUFFERS), count=1)
                if TURNS and HALF == 1:  # hand this sum to the first consumer, once it has taken the previous one
                    mbarrier.wait(handoff.index(1), (t & 1) ^ 1)
                    red.store(acc)
                    if REM > 0:
                        red2.store(acc2)
                    cta_barrier()  # every thread's part stored before the arrive releases them
                    mbarrier.arrive(handoff.index(0), count=1)
                    t += 1
                else:
                    if TURNS:  # the second consumer's sum of the other blocks of K
                        mbarrier.wait(handoff.index(0), t & 1)
                        acc += red.load(layout)
                        if REM > 0:
                            acc2 += red2.load(layout2)
                        cta_barrier()  # every thread's part read before the arrive lets the next one in
                        mbarrier.arrive(handoff.index(1), count=1)
                        t += 1
                    row0 = inside((pid_m * BOXES + BOX) * HALF_M, HALF_M, M, INSIDE)  # as the load warp loaded them
                    col0 = inside(pid_n * (BLOCK_N + REM), BLOCK_N, N, INSIDE)
                    acc = scaled(acc, SA, SB, row0, col0, M, N, SCALES)
                    first = (unit // (num_pid_m * num_pid_n)) * M_PAD  # split-K: this slice's rows of the fp32 partials
                    store_tile(acc, c_smem, c_desc, first, row0, col0, C_T)
                    if REM > 0:
                        col2 = inside(pid_n * (BLOCK_N + REM) + BLOCK_N, REM, N, INSIDE)
                        acc2 = scaled(acc2, SA, SB, row0, col2, M, N, SCALES)
                        store_tile(acc2, c2_smem, c2_desc, first, row0, col2, C_T)
        tma.store_wait(pendings=0)

    @gluon.jit
    def wgmma_ws_kernel(
        a_desc, b_desc, c_desc,                         # A M x K, B K x N, C M x N (A: 64-row boxes, C: 64-row blocks)
        b2_desc, c2_desc,                               # REM > 0: boxes of B's and C's REM columns past BLOCK_N
        SA, SB,                                         # FP8 scales (fp32): one each, or per row of A / column of B
        M, N, K,                                        # problem size
        M_PAD,                                          # split-K: C's rows per slice of c_desc's fp32 partials
        GROUP_M: gl.constexpr,                          # grouped tile order
        NUM_BUFFERS: gl.constexpr,                      # stages of the load ring
        A_T: gl.constexpr,                              # A stored K x M (M-major; 16-bit only)
        B_T: gl.constexpr,                              # B stored N x K (K-major; FP8 needs it)
        C_T: gl.constexpr,                              # C stored N x M (M-major)
        SCALES: gl.constexpr,                           # 0: none; 1: per-tensor; 2: row-wise
        PROMOTE: gl.constexpr,                          # FP8: add each block's sum into fp32 (2: in pairs)
        CONSUMER_REGS: gl.constexpr,                    # registers per thread of the worker consumer warpgroups
        LOAD_REGS: gl.constexpr,                        # ... and of the load warp
        CONSUMERS: gl.constexpr,                        # consumer warpgroups: tiles of 64 x CONSUMERS rows
        SPLIT_K: gl.constexpr,                          # slices of K per tile; > 1: c_desc is the fp32 partials'
        INSIDE: gl.constexpr,                           # edge tiles' boxes moved back inside A, B and C (inside())
        REM: gl.constexpr = 0,                          # tiles BLOCK_N + REM wide: a second MMA of N = REM (16-bit)
        TURNS: gl.constexpr = False,                    # two consumers on one 64-row tile, alternate blocks of K
        WIDE: gl.constexpr = False,                     # REM's tiles as one MMA BLOCK_N + REM wide (fused_ops/wide_mma)
        OFF_A: gl.constexpr = 0,                        # WIDE: a_bufs' and b_bufs' shared offsets (wide_mma.offsets)
        OFF_B: gl.constexpr = 0,
    ):
        """Warp-specialized: one warp loads, one to four warpgroups of 4 warps (this kernel's own, and workers)
        each compute 64 rows of every tile (TURNS: two take turns on one 64-row tile's blocks of K), synchronized
        only through mbarriers (no CTA-wide barrier), so one can wait on its MMAs and add while another's run."""
        BOXES: gl.constexpr = 1 if TURNS else CONSUMERS  # 64-row boxes of A per stage, and C staging tiles
        a_bufs = gl.allocate_shared_memory(a_desc.dtype, [NUM_BUFFERS * BOXES] + a_desc.block_type.shape,
                                           a_desc.layout)
        if WIDE:  # BLOCK_N + REM rows of K-major B a stage, in one run (Gluon's shared shapes are powers of two:
            # boxes of REM's box, R rows)
            BN: gl.constexpr = b_desc.block_type.shape[0]
            G: gl.constexpr = (BN + REM) // b2_desc.block_type.shape[0]
            b_bufs = gl.allocate_shared_memory(b2_desc.dtype, [NUM_BUFFERS * G] + b2_desc.block_type.shape,
                                               b2_desc.layout)
        else:
            b_bufs = gl.allocate_shared_memory(b_desc.dtype, [NUM_BUFFERS] + b_desc.block_type.shape, b_desc.layout)
        c_bufs = gl.allocate_shared_memory(c_desc.dtype, [BOXES] + c_desc.block_type.shape, c_desc.layout)
        if REM > 0 and not WIDE:  # REM's columns of C leave through the same staging tile, after the first part's
            b2_bufs = gl.allocate_shared_memory(b2_desc.dtype, [NUM_BUFFERS] + b2_desc.block_type.shape,
                                                b2_desc.layout)
        else:  # not read
            b2_bufs = b_bufs
        ready = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(NUM_BUFFERS):
            mbarrier.init(ready.index(i), count=1)
            mbarrier.init(empty.index(i), count=BOXES)  # TURNS: each stage is one consumer's
        if TURNS:  # the second consumer's fp32 sums, handed to the first (handoff 0: stored, 1: taken)
            red = gl.allocate_shared_memory(gl.float32, c_desc.block_type.shape, sums_layout(c_desc.block_type.shape))
            if REM > 0:
                red2 = gl.allocate_shared_memory(gl.float32, c2_desc.block_type.shape,
                                                 sums_layout(c2_desc.block_type.shape))
            else:  # not read
                red2 = red
            handoff = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
            mbarrier.init(handoff.index(0), count=1)
            mbarrier.init(handoff.index(1), count=1)
        else:  # not read
            red, red2, handoff = c_bufs, c_bufs, ready
        # what every consumer reads; one branch per consumer count, since Gluon holds no (function, arguments) pair
        # in a variable and a tuple of constexprs does not pass into a partition
        ops = (a_bufs, b_bufs, b2_bufs, ready, empty, c_desc, c2_desc, SA, SB, M, N, K, M_PAD, red, red2, handoff)
        if CONSUMERS == 1:
            gl.warp_specialize([
                (ws_consumer, (0, c_bufs.index(0), ops, GROUP_M, NUM_BUFFERS, A_T, B_T, C_T, SCALES, PROMOTE,
                               CONSUMERS, TURNS, SPLIT_K, INSIDE, REM, WIDE, OFF_A, OFF_B)),
                (ws_loads, (a_desc, b_desc, b2_desc, a_bufs, b_bufs, b2_bufs, ready, empty, M, N, K, GROUP_M,
                            NUM_BUFFERS, A_T, B_T, BOXES, SPLIT_K, INSIDE, REM, WIDE)),
            ], [1], [LOAD_REGS])
        elif CONSUMERS == 2:
            gl.warp_specialize([
                (ws_consumer, (0, c_bufs.index(0), ops, GROUP_M, NUM_BUFFERS, A_T, B_T, C_T, SCALES, PROMOTE,
                               CONSUMERS, TURNS, SPLIT_K, INSIDE, REM, WIDE, OFF_A, OFF_B)),
                (ws_consumer, (1, c_bufs.index(BOXES - 1), ops, GROUP_M, NUM_BUFFERS, A_T, B_T, C_T, SCALES,
                               PROMOTE, CONSUMERS, TURNS, SPLIT_K, INSIDE, REM, WIDE, OFF_A, OFF_B)),
                (ws_loads, (a_desc, b_desc, b2_desc, a_bufs, b_bufs, b2_bufs, ready, empty, M, N, K, GROUP_M,
                            NUM_BUFFERS, A_T, B_T, BOXES, SPLIT_K, INSIDE, REM, WIDE)),
            ], [4, 1], [CONSUMER_REGS, LOAD_REGS])
        elif CONSUMERS == 3:
            gl.warp_specialize([
                (ws_consumer, (0, c_bufs.index(0), ops, GROUP_M, NUM_BUFFERS, A_T, B_T, C_T, SCALES, PROMOTE,
                               CONSUMERS, TURNS, SPLIT_K, INSIDE, REM, WIDE, OFF_A, OFF_B)),
                (ws_consumer, (1, c_bufs.index(1), ops, GROUP_M, NUM_BUFFERS, A_T, B_T, C_T, SCALES, PROMOTE,
                               CONSUMERS, TURNS, SPLIT_K, INSIDE, REM, WIDE, OFF_A, OFF_B)),
                (ws_consumer, (2, c_bufs.index(2), ops, GROUP_M, NUM_BUFFERS, A_T, B_T, C_T, SCALES, PROMOTE,
                               CONSUMERS, TURNS, SPLIT_K, INSIDE, REM, WIDE, OFF_A, OFF_B)),
                (ws_loads, (a_desc, b_desc, b2_desc, a_bufs, b_bufs, b2_bufs, ready, empty, M, N, K, GROUP_M,
                            NUM_BUFFERS, A_T, B_T, BOXES, SPLIT_K, INSIDE, REM, WIDE)),
            ], [4, 4, 1], [CONSUMER_REGS, CONSUMER_REGS, LOAD_REGS])
        else:
            gl.warp_specialize([
                (ws_consumer, (0, c_bufs.index(0), ops, GROUP_M, NUM_BUFFERS, A_T, B_T, C_T, SCALES, PROMOTE,
                               CONSUMERS, TURNS, SPLIT_K, INSIDE, REM, WIDE, OFF_A, OFF_B)),
                (ws_consumer, (1, c_bufs.index(1), ops, GROUP_M, NUM_BUFFERS, A_T, B_T, C_T, SCALES, PROMOTE,
                               CONSUMERS, TURNS, SPLIT_K, INSIDE, REM, WIDE, OFF_A, OFF_B)),
                (ws_consumer, (2, c_bufs.index(2), ops, GROUP_M, NUM_BUFFERS, A_T, B_T, C_T, SCALES, PROMOTE,
                               CONSUMERS, TURNS, SPLIT_K, INSIDE, REM, WIDE, OFF_A, OFF_B)),
                (ws_consumer, (3, c_bufs.index(3), ops, GROUP_M, NUM_BUFFERS, A_T, B_T, C_T, SCALES, PROMOTE,
                               CONSUMERS, TURNS, SPLIT_K, INSIDE, REM, WIDE, OFF_A, OFF_B)),
                (ws_loads, (a_desc, b_desc, b2_desc, a_bufs, b_bufs, b2_bufs, ready, empty, M, N, K, GROUP_M,
                            NUM_BUFFERS, A_T, B_T, BOXES, SPLIT_K, INSIDE, REM, WIDE)),
            ], [4, 4, 4, 1], [CONSUMER_REGS, CONSUMER_REGS, CONSUMER_REGS, LOAD_REGS])

_GL_DTYPES = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32",
              torch.float8_e4m3fn: "float8e4nv"}
BLOCK_M = 128  # two consumer warpgroups of 64 rows; 192, 256: three, four (tile counts that fill one wave where 128
BLOCK_MS = (64, 128, 192, 256)  # rows need two); 64: one (128 rows in two tiles, each streaming its own columns of B)
SWAP_BLOCK_NS = (64, 128, 192)  # swap: B's columns per tile, one to three consumers
REMS = (8, 16, 32, 64)  # run(rem=...): the second MMA's N (a power of two, at least 16 bytes of a row)
# registers per thread of wgmma_ws_kernel's worker consumer warpgroups and of its load warp (setmaxnreg), by the
# number of consumers: what an SM's 64K registers leave them, in multiples of 8. Four consumers run 640 threads,
# launched at 96 registers each (61440): the load warp gets 32 and every consumer 112, where 40 and 120 left the
# first consumer 80 and spilled a 64x160 tile's accumulators (tests/test_wgmma.py compiles it for sm_90a)
CONSUMER_REGS = {1: 232, 2: 232, 3: 152, 4: 112}
LOAD_REGS = {1: 40, 2: 40, 3: 40, 4: 32}
PROMOTE_MAX_WIDTH = 192  # FP8 precise accumulation on rem tiles: a block's 64 x 224 sum beside the total spills
PAIRS_MAX_REM = 16  # promote="pairs" beside a second MMA of at most 16 columns: 3 x 64x144 sums fit 232 registers
# without spills (sm_90a, tests/test_wgmma.py); 3 x 64x160 spill
ROW_SWIZZLE_MIN = None  # None, or the narrowest swizzle span box_layout may take: explored, no gain (results/current/
# gemm/ROUNDS.md, "Operand rows off 32 bytes"; scripts/swizzle_probe.py)
WIDE_MMA = True  # tiles BLOCK_N + REM wide as one MMA a k step from inline PTX where wide_mma.eligible (False: two)
KEEP_INSIDE = True  # edge boxes moved back inside the operands (inside(); False: loads past the edge, zero-filled)
SMEM_BYTES = 232448 - 1024  # shared memory a program may use on an H100/H200, less the barriers' and the compiler's


def smem_bytes(block_n, block_k, stages, in_bytes, out_bytes, block_m=BLOCK_M, rem=0, turns=False):
    """Shared memory of the ring of `stages` A/B stages (rem: its extra rows of A or columns of B) plus the consumers'
    C staging tiles (which REM's part of C passes through in turn; turns: and the fp32 sums one consumer hands the
    other, 64 x (block_n + rem)), barriers aside (SMEM_BYTES leaves room for them)."""
    sums = block_m * (block_n + rem) * 4 if turns else 0
    return stages * (block_m + block_n + rem) * block_k * in_bytes + block_m * block_n * out_bytes + sums


def fits(block_n, block_k, stages, in_bytes, out_bytes, block_m=BLOCK_M, rem=0, turns=False):
    """Whether smem_bytes(...) fits in what a program may use (SMEM_BYTES)."""
    return smem_bytes(block_n, block_k, stages, in_bytes, out_bytes, block_m, rem, turns) <= SMEM_BYTES


def box_layout(block, t):
    """The shared layout of `t`'s boxes of shape `block`: the widest swizzle the box allows (Gluon's default), or with
    ROW_SWIZZLE_MIN set, the widest that t's row pitch is a multiple of, down to that span, so that each box row starts
    on a swizzle span where the rows are not 128-byte aligned."""
    dtype = getattr(gl, _GL_DTYPES[t.dtype])
    layout = gl.NVMMASharedLayout.get_default_for(block, dtype)
    if ROW_SWIZZLE_MIN is None:
        return layout
    pitch = t.stride(0) * t.element_size()
    span = next((s for s in (128, 64, 32, 0) if s <= layout.swizzle_byte_width and s >= ROW_SWIZZLE_MIN
                 and (s == 0 or pitch % s == 0)), layout.swizzle_byte_width)
    return gl.NVMMASharedLayout(span, layout.element_bitwidth, rank=len(block))


def supports(a, b, c):
    """Whether run() takes these operands: a Hopper GPU, Gluon present, A row-major FP8/bf16/fp16 and B of the same
    dtype, row-major or column-major (FP8: column-major, K-major, as its tensor cores read it), C row-major in
    bf16/fp16/fp32, each 16-byte aligned with 16-byte aligned row strides (what TMA can describe)."""
    if not (_GLUON and a.is_cuda and torch.cuda.get_device_capability(a.device)[0] == 9):
        return False
    if a.dtype not in _GL_DTYPES or a.dtype == torch.float32 or b.dtype != a.dtype or c.dtype not in _GL_DTYPES:
        return False
    b_t = b.stride(0) == 1 and b.stride(1) != 1
    if a.stride(1) != 1 or c.stride(1) != 1 or not (b_t or b.stride(1) == 1):
        return False
    if a.dtype == torch.float8_e4m3fn and not b_t:
        return False
    return all(t.data_ptr() % 16 == 0 and (row * t.element_size()) % 16 == 0
               for t, row in ((a, a.stride(0)), (b, b.stride(1) if b_t else b.stride(0)), (c, c.stride(0))))


def run(a, b, c, block_n, block_k, stages, programs, scale_a=None, scale_b=None, promote=False, group_m=8,
        block_m=BLOCK_M, swap=False, split_k=1, rem=0, turns=False):
    """c = a @ b (FP8: * scales) on one GPU with wgmma_ws_kernel: block_m x block_n tiles, `stages` ring stages, at
    most `programs` persistent programs; `supports(a, b, c)` must hold. block_m 64, 128, 192 or 256: one to four
    consumer warpgroups of 64 rows. swap: the MMAs run on C's transpose, B's columns as their rows: block_n 64, 128 or
    192 (one to three consumers of 64 columns) and block_m any power of two from 16 to 256 (the MMAs' N), as cuBLAS does
    for few rows. promote (FP8): precise accumulation (fp32 every block of K; "pairs": two blocks' MMAs issued
    at a time, the first's sum added while the second's run, at most 128 rows and no rem or turns), else the tensor
    cores' own accumulation across K. split_k: each tile's K in that many slices (as many as have a block of K
    each), one unit of work apiece, whose fp32 partials a second kernel adds into c (where tiles are too few for the
    SMs; the partials: split_k x C's size in fp32, a buffer kept per device and size, so calls on two streams at
    once must not share one). rem: tiles rem (8 to 64) wider: with swap, block_m + rem rows of A, so that 129-144
    rows run as one 144-row tile rather than two of 128; without, block_n + rem columns of B (128 + 32: 160), tile
    counts between those of powers of two. On K-major operands and up to three consumers one MMA that wide a k step
    (fused_ops/wide_mma; WIDE_MMA; its first call per configuration compiles twice), else a second MMA of N = rem
    past the first's (Gluon's MMAs are powers of two); the wide MMA takes sums of them too (96 = 64 + 32: 224-wide
    tiles, REM's columns loaded and stored as boxes of 32). turns (block_m 64, stages even): two consumer warpgroups on
    each 64-row tile, taking alternate blocks of K and adding their sums at the tile's end (FP8 precise
    accumulation: one's MMAs run while the other adds). One launch (two with split_k); host cost: three TMA
    descriptors (five with rem). Not collective."""
    _note_untested_triton()
    args, consts, units, partials = kernel_args(a, b, c, block_n, block_k, stages, block_m, swap, scale_a, scale_b,
                                                promote, group_m, split_k, rem, turns)
    grid = (min(programs, units),)
    if consts["WIDE"]:  # the ring's shared offsets for the wide MMA's descriptors (two compiles, once), else two MMAs
        offsets = wide_mma.offsets(wgmma_ws_kernel, args, consts, grid)
        if offsets is None and rem not in REMS:
            raise RuntimeError(f"wgmma.run: rem={rem} tiles need one wide MMA, whose shared offsets were not found "
                               f"(fused_ops/wide_mma warned why); rem one of {REMS} runs as two MMAs")
        consts.update(offsets or {"WIDE": False})
    wgmma_ws_kernel[grid](*args, **consts, num_warps=4)
    if partials is not None:
        sum_slices(partials, c)
    return c


def slices(k, block_k, split_k):
    """The slices of K that split_k asks for once each has at least one block (empty slices would add nothing)."""
    blocks = triton.cdiv(k, block_k)
    return triton.cdiv(blocks, triton.cdiv(blocks, max(1, split_k)))


_partials = {}


def kernel_args(a, b, c, block_n, block_k, stages, block_m=BLOCK_M, swap=False, scale_a=None, scale_b=None,
                promote=False, group_m=8, split_k=1, rem=0, turns=False):
    """(arguments, constexprs, units of work, fp32 partials or None) of wgmma_ws_kernel for run()'s call (the CPU
    tests compile it from these)."""
    rows, cols = (block_n, block_m) if swap else (block_m, block_n)
    if rows not in (SWAP_BLOCK_NS if swap else BLOCK_MS):
        what = "block_n" if swap else "block_m"
        raise ValueError(f"wgmma.run: {what}={rows}; expected one of {SWAP_BLOCK_NS if swap else BLOCK_MS} "
                         f"(consumer warpgroups of 64 {'columns' if swap else 'rows'})")
    if swap and (cols < 16 or cols > 256 or cols & (cols - 1)):
        raise ValueError(f"wgmma.run: block_m={cols} with swap; expected a power of two from 16 to 256")
    if not isinstance(split_k, int) or split_k < 1:
        raise ValueError(f"wgmma.run: split_k={split_k!r}; expected a positive integer")
    if rem and rem not in REMS and not (isinstance(rem, int) and rem > 0 and (rem & -rem) in REMS):
        raise ValueError(f"wgmma.run: rem={rem!r}; expected 0, one of {REMS}, or (one wide MMA) a sum of them, a "
                         f"multiple of its smallest (48, 96)")
    if turns and (swap or rows != 64):
        raise ValueError(f"wgmma.run: turns=True with {'swap=True' if swap else f'block_m={rows}'}; expected "
                         f"block_m=64, not swapped (two consumers taking turns on one 64-row tile)")
    if turns and stages % 2:  # each consumer keeps to its own stages (the ring's odd or even blocks)
        raise ValueError(f"wgmma.run: turns=True with stages={stages}; expected an even number")
    if stages < 2:  # a consumer releases a stage once the next block's MMAs are issued: one stage would deadlock
        raise ValueError(f"wgmma.run: stages={stages}; expected at least 2 (a smaller block_k frees shared memory)")
    if promote == "pairs" and (rows > 128 or rem > PAIRS_MAX_REM or turns):  # a third sum per consumer
        raise ValueError(f"wgmma.run: promote='pairs' with block_m={rows}, rem={rem}, turns={turns}; expected "
                         f"block_m of at most 128, rem of at most {PAIRS_MAX_REM} and turns=False (each consumer "
                         f"keeps two blocks' sums beside the total)")
    if promote and rows > 192:
        raise ValueError(f"wgmma.run: FP8 precise accumulation with block_m={rows}; expected at most 192 (each "
                         f"consumer keeps a block's sum beside the total: four would spill)")
    if promote and rem and cols + rem > PROMOTE_MAX_WIDTH:
        raise ValueError(f"wgmma.run: FP8 precise accumulation on tiles {cols} + {rem} wide; expected at most "
                         f"{PROMOTE_MAX_WIDTH} (each consumer keeps a block's sum beside the total: wider ones spill)")
    if rem > cols:  # REM's part of C passes through the first part's staging tile
        raise ValueError(f"wgmma.run: rem={rem} past a tile {cols} {'rows of A' if swap else 'columns of B'} wide; "
                         f"expected at most {cols}")
    split = slices(a.shape[1], block_k, split_k)
    need = smem_bytes(block_n, block_k, stages, a.element_size(), 4 if split > 1 else c.element_size(), block_m, rem,
                      turns)  # (slices stage fp32 partials)
    if need > SMEM_BYTES:
        raise ValueError(f"wgmma.run: {stages} stages of {block_m}x{block_n}x{block_k} tiles (rem={rem}, "
                         f"{split} slices of K) need {need} bytes of shared memory with C's staging tiles; expected "
                         f"at most {SMEM_BYTES}: fewer stages or a smaller block_k (local_gemm._fit cuts the stages)")
    partials, m_pad = None, 0
    if split > 1:  # fp32 partials of C's shape per slice, padded to whole tiles (TMA stores never cross), and C's
        # columns to whole blocks of sum_slices (it loads the partials' columns unmasked)
        tile_m, tile_n = (cols + rem, rows) if swap else (rows, cols + rem)
        m_pad = triton.cdiv(c.shape[0], tile_m) * tile_m
        n_pad = triton.cdiv(triton.cdiv(c.shape[1], tile_n) * tile_n, SUM_COLS) * SUM_COLS
        key = (c.device, split * m_pad * n_pad)
        if key in _partials:
            partials = _partials[key]
        else:  # kept for the next call; not one made while a CUDA graph captures (the graph's pool owns that one)
            partials = torch.empty(split * m_pad, n_pad, device=c.device, dtype=torch.float32)
            if not (c.is_cuda and torch.cuda.is_current_stream_capturing()):
                _partials[key] = partials
        partials = partials.view(split, m_pad, n_pad)
        c = partials.view(split * m_pad, n_pad)  # the kernel writes the partials where it would write C
    if swap:  # c.T = b.T @ a.T: the kernel sees B's columns as rows (A_T: M-major, 16-bit) and writes C transposed
        a, b, c, scale_a, scale_b = b.t(), a.t(), c.t(), scale_b, scale_a
    m, k = a.shape
    n = b.shape[1]
    a_t, b_t, c_t = (t.stride(1) != 1 for t in (a, b, c))
    # TMA faults (illegal instruction) on an innermost coordinate that is not 16 bytes into the row: boxes move inside
    # only where the starts that inside() gives stay so, i.e. the extents of the innermost dimensions they shift are
    # (rows: A or C stored transposed; columns: B or C row-major); else they load past the edge, zero-filled
    shifted = [(m, t) for t, tr in ((a, a_t), (c, c_t)) if tr] + [(n, t) for t, tr in ((b, b_t), (c, c_t)) if not tr]
    keep_inside = KEEP_INSIDE and all(e * t.element_size() % 16 == 0 for e, t in shifted)

    def desc(t, transposed, block):
        block, t = (block[::-1], t.t()) if transposed else (block, t)
        return TensorDescriptor.from_tensor(t, block, box_layout(block, t))
    scales = 0 if scale_a is None else 1 if scale_a.numel() == 1 and scale_b.numel() == 1 else 2
    if scales == 0:
        scale_a = scale_b = c  # not read
    descs = (desc(a, a_t, [64, block_k]), desc(b, b_t, [block_k, cols]), desc(c, c_t, [64, cols]))
    consumers = 2 if turns else rows // 64
    promote = 2 if promote == "pairs" else int(bool(promote))
    wide = WIDE_MMA and rem > 0 and wide_mma.eligible(
        a_t, b_t, block_k * a.element_size(), descs[0].layout.swizzle_byte_width, cols + rem, consumers, turns,
        promote, descs[1].layout.swizzle_byte_width)
    if rem not in REMS + (0,) and not wide:
        raise ValueError(f"wgmma.run: rem={rem}, no power of two: such tiles run only as one MMA {cols + rem} wide "
                         f"(fused_ops/wide_mma: A and B K-major with block_k one swizzle span, at most "
                         f"{wide_mma.MAX_CONSUMERS} consumers, no turns, FP8 promoted per block or not at all; got "
                         f"A {'M' if a_t else 'K'}-major, B {'K' if b_t else 'N'}-major, consumers: {consumers}, "
                         f"turns={bool(turns)}, promote={promote}); or rem one of {REMS}")
    part = rem & -rem  # REM's boxes of B and C: REM, or R = its lowest power of two, REM / R of them (one wide MMA)
    rest = (desc(b, b_t, [block_k, part]), desc(c, c_t, [64, part])) if rem else descs[1:]  # REM's boxes
    args = descs + rest + (scale_a, scale_b, m, n, k, m_pad)
    consts = dict(GROUP_M=group_m, NUM_BUFFERS=stages, A_T=a_t, B_T=b_t, C_T=c_t, SCALES=scales,
                  PROMOTE=promote, CONSUMER_REGS=CONSUMER_REGS[consumers], LOAD_REGS=LOAD_REGS[consumers],
                  CONSUMERS=consumers, SPLIT_K=split, INSIDE=keep_inside, REM=rem, TURNS=bool(turns), WIDE=wide)
    return args, consts, triton.cdiv(m, rows) * triton.cdiv(n, cols + rem) * split, partials


@triton.jit
def sum_slices_kernel(P, C, M, N_V, N_PAD, SLICE, LDC_V, SLICES: tl.constexpr, BLOCK_R: tl.constexpr,
                      BLOCK_C: tl.constexpr, VEC: tl.constexpr):
    """C = the sum of split-K's fp32 partials (P: SLICES slices of SLICE elements, each M_PAD x N_PAD of C's
    shape): BLOCK_R rows by BLOCK_C columns of C per program, every slice's loads issued before the adds. No division
    per element, and the partials' columns loaded whole (N_PAD covers the grid's columns: 16-byte loads); C's row
    stride and width come as multiples of VEC (LDC_V x VEC, N_V x VEC), so that the stores move VEC elements at a
    time where C's rows are not 16 elements apart (a row division and unaligned rows of 1000 ran 7x slower)."""
    r = (tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)  # 64-bit: slices may pass 2^31 elements
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    rows = r[:, None] < M
    i = r[:, None] * N_PAD + c[None, :]
    acc = tl.load(P + i, mask=rows, other=0.0)
    for _ in tl.static_range(1, SLICES):
        i += SLICE
        acc += tl.load(P + i, mask=rows, other=0.0)
    tl.store(C + r[:, None] * (LDC_V * VEC) + c[None, :], acc.to(C.dtype.element_ty),
             mask=rows & (c[None, :] < N_V * VEC))


SUM_LOADS = 64  # loads in flight per thread of sum_slices_kernel: slices x elements per thread
SUM_COLS = 64  # columns of C per program of sum_slices_kernel (the partials' N_PAD is a multiple of it)


def sum_slices(partials, c):
    """c = partials.sum(0) (fp32 partials of C's shape, padded to whole tiles): one launch, every program's loads in
    flight, at least two programs per SM where C has the rows."""
    split, m_pad, n_pad = partials.shape
    m, n = c.shape
    sms = torch.cuda.get_device_properties(c.device).multi_processor_count if c.is_cuda else 4
    # BLOCK_R x SUM_COLS elements per program, 4 per thread (16 bytes of fp32) up to 4 warps, more beyond
    block_r = max(2, min(64, 1 << (max(1, 2 * SUM_LOADS // split).bit_length() - 1)))
    while block_r > 2 and triton.cdiv(m, block_r) * triton.cdiv(n, SUM_COLS) < 2 * sms:
        block_r //= 2
    vec = store_vec(c, c.stride(0), n)
    sum_slices_kernel[(triton.cdiv(m, block_r), triton.cdiv(n, SUM_COLS))](
        partials, c, m, n // vec, n_pad, m_pad * n_pad, c.stride(0) // vec, SLICES=split, BLOCK_R=block_r,
        BLOCK_C=SUM_COLS, VEC=vec, num_warps=min(4, block_r // 2))
