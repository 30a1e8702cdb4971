"""Per-tile communication pieces shared by the variants: scatter a finished tile to every rank, reduce a tile over
every rank's partial, the loops that walk tiles in the GEMM's order, and how the copy-engine variants chunk rows."""

import triton
import triton.language as tl

import iris
from iris.tracing import REDUCE, STORE, WAIT, record
from . import sync
from .gemm import NEXT_IN_AT_START, c_tile, call_slot, tile_coords

# Copy-engine variants (iris.CopyEngine) move rows in chunks, each raising a flag. Each copy costs a few µs of copy-
# engine time besides its bytes (benchmarks/copy_engine.py; docs/performance.md, "Floors"), so rows are split only as
# finely as the GEMM can use: a chunk is at least the rows one wave of programs
# works on, at least CHUNK_BYTES, and a shard has at most MAX_CHUNKS.
CHUNK_BYTES = 8 << 20
MAX_CHUNKS = 8


def chunk_blocks(blocks, col_blocks, programs, block_m, row_bytes):
    """Row blocks per copy (see CHUNK_BYTES) of a shard of `blocks` row blocks, each `col_blocks` tiles wide."""
    per = max(triton.cdiv(programs, col_blocks), triton.cdiv(CHUNK_BYTES, block_m * row_bytes),
              triton.cdiv(blocks, MAX_CHUNKS))
    return max(1, min(per, blocks))


@triton.jit
def scatter_tile(
    C,                                              # the gathered output, on the heap
    pid_m, pid_n,                                   # the tile
    M, N,                                           # size of C's block
    stride_cm, stride_cn, col0,                     # C's strides, the block's first column
    cur_rank, world_size, heap_bases,               # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,   # tile
):
    """Copy this rank's finished tile of C into the same place of every other rank's C."""
    ptrs, mask = c_tile(C, pid_m, pid_n, M, N, stride_cm, stride_cn, col0, BLOCK_M, BLOCK_N)
    val = tl.load(ptrs, mask=mask)
    for i in range(1, world_size):
        iris.store(ptrs, val, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=mask)


@triton.jit
def reduce_tile(
    P,                                              # the partials, on the heap
    pid_m, pid_n,                                   # the tile
    M, N,                                           # problem size
    stride_m, stride_n,                             # P's strides
    cur_rank, world_size, heap_bases,               # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,   # tile
):
    """fp32 sum of the tile of P over every rank's copy (own first, then peers in rank order from the next one)."""
    ptrs, mask = c_tile(P, pid_m, pid_n, M, N, stride_m, stride_n, 0, BLOCK_M, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(world_size):
        acc += iris.load(ptrs, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=mask).to(tl.float32)
    return acc


@triton.jit
def scatter_loop(
    C,                                               # the gathered output, on the heap
    M, N,                                            # problem size
    stride_cm, stride_cn, col0,                      # C's strides, this rank's first column
    flags, epoch,                                    # per-tile flags, this call's epoch
    cur_rank, world_size, heap_bases,                # this rank, the ranks, the symmetric heap
    start, step,                                     # this program's tiles: start, start+step, ...
    WAIT_FLAGS: tl.constexpr,                        # wait for each tile's flag
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TRACE=None, TRACING: tl.constexpr = tl.constexpr(False),  # event trace (iris.tracing)
    SYNC=None,                                       # call synchronization (sync.py)
    WAIT_ENTRY: tl.constexpr = tl.constexpr(True),   # first push waits for the peers' entry
):
    """Push tiles start, start+step, ... of this rank's C block to every rank; with WAIT_FLAGS, first wait until the
    GEMM has set flags[tile] to this call's epoch. With SYNC (fused_ops/sync.py) and WAIT_ENTRY, the first push waits
    for the peers' entry into the call."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    seen = 0
    for tile in range(start, num_pid_m * num_pid_n, step):
        if WAIT_FLAGS:
            record(TRACE, WAIT, tile, TRACING)
            iris.wait(flags + tile, epoch, cur_rank, heap_bases, cmp="eq")
            record(TRACE, -WAIT, tile, TRACING)
        if SYNC is not None and WAIT_ENTRY:
            seen = sync.entered(SYNC, epoch, seen, cur_rank, world_size, heap_bases)
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        record(TRACE, STORE, tile, TRACING)
        scatter_tile(C, pid_m, pid_n, M, N, stride_cm, stride_cn, col0, cur_rank, world_size, heap_bases, BLOCK_M,
                     BLOCK_N)
        record(TRACE, -STORE, tile, TRACING)


@triton.jit
def scatter_kernel(
    C,                                         # the gathered output, on the heap
    M, N,                                      # problem size
    stride_cm, stride_cn, col0,                # C's strides, this rank's first column
    flags,                                     # per-tile flags
    SYNC,                                      # the call's synchronization words (sync.py)
    cur_rank, world_size, heap_bases,          # this rank, the ranks, the symmetric heap
    WAIT: tl.constexpr,                        # wait for each tile's flag
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TRACE=None, TRACING: tl.constexpr = tl.constexpr(False),  # event trace (iris.tracing)
    PDL: tl.constexpr = tl.constexpr(False),   # programmatic dependent launch (iris.launched_early)
    ROLE: tl.constexpr = tl.constexpr(0),      # its part in a call of several kernels (sync.start)
):
    iris.launched_early(PDL, NEXT_IN_AT_START)
    epoch = sync.start(SYNC, ROLE, cur_rank, world_size, heap_bases)
    scatter_loop(C, M, N, stride_cm, stride_cn, col0, flags, epoch, cur_rank, world_size, heap_bases,
                 tl.program_id(0), tl.num_programs(0), WAIT, BLOCK_M, BLOCK_N, GROUP_M, TRACE, TRACING, SYNC,
                 (sync.WAIT & ROLE) != 0)
    sync.finish(SYNC, epoch, ROLE, cur_rank, world_size, heap_bases)


@triton.jit
def reduce_loop(
    P, C,                                            # the partials (on the heap), the output
    M, N,                                            # problem size
    stride_m, stride_n,                              # strides of P and C
    flags, epoch,                                    # per-tile arrival counts, epoch
    cur_rank, world_size, heap_bases,                # this rank, the ranks, the symmetric heap
    start, step,                                     # this program's tiles: start, start+step, ...
    WAIT_FLAGS: tl.constexpr,                        # wait for each tile's arrivals
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TRACE=None, TRACING: tl.constexpr = tl.constexpr(False),  # event trace (iris.tracing)
    SYNC=None,                                       # call synchronization (sync.py)
    WAIT_ENTRY: tl.constexpr = tl.constexpr(True),   # first read waits for the peers' entry
):
    """C tile = sum over ranks of the P tile; with WAIT_FLAGS, first wait until every rank has arrived at flags[tile]
    (arrival counters grow by world_size per call, so `>= world_size * epoch` never sees a stale count). With SYNC
    (fused_ops/sync.py) and WAIT_ENTRY, the first tile waits for the peers' entry into the call."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    seen = 0
    for tile in range(start, num_pid_m * num_pid_n, step):
        if WAIT_FLAGS:
            record(TRACE, WAIT, tile, TRACING)
            iris.wait(flags + tile, world_size * epoch, cur_rank, heap_bases, cmp="ge")
            record(TRACE, -WAIT, tile, TRACING)
        if SYNC is not None and WAIT_ENTRY:
            seen = sync.entered(SYNC, epoch, seen, cur_rank, world_size, heap_bases)
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        record(TRACE, REDUCE, tile, TRACING)
        acc = reduce_tile(P, pid_m, pid_n, M, N, stride_m, stride_n, cur_rank, world_size, heap_bases, BLOCK_M,
                          BLOCK_N)
        ptrs, mask = c_tile(C, pid_m, pid_n, M, N, stride_m, stride_n, 0, BLOCK_M, BLOCK_N)
        tl.store(ptrs, acc.to(C.dtype.element_ty), mask=mask)
        record(TRACE, -REDUCE, tile, TRACING)


@triton.jit
def reduce_kernel(
    P, C,                                      # the partials (on the heap), the output
    M, N,                                      # problem size
    stride_m, stride_n,                        # strides of P and C
    flags,                                     # per-tile arrival counts
    SYNC, slot_size,                           # call synchronization (sync.py); P's double-buffer slot
    cur_rank, world_size, heap_bases,          # this rank, the ranks, the symmetric heap
    WAIT: tl.constexpr,                        # wait for each tile's arrivals
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    TRACE=None, TRACING: tl.constexpr = tl.constexpr(False),  # event trace (iris.tracing)
    PDL: tl.constexpr = tl.constexpr(False),   # programmatic dependent launch (iris.launched_early)
    ROLE: tl.constexpr = tl.constexpr(0),      # its part in a call of several kernels (sync.start)
):
    iris.launched_early(PDL, NEXT_IN_AT_START)
    epoch = sync.start(SYNC, ROLE, cur_rank, world_size, heap_bases)
    P = call_slot(P, epoch, slot_size)
    reduce_loop(P, C, M, N, stride_m, stride_n, flags, epoch, cur_rank, world_size, heap_bases, tl.program_id(0),
                tl.num_programs(0), WAIT, BLOCK_M, BLOCK_N, GROUP_M, TRACE, TRACING, SYNC, (sync.WAIT & ROLE) != 0)
    sync.finish(SYNC, epoch, ROLE, cur_rank, world_size, heap_bases)
