"""What the fused GEMM+ReduceScatter variants share: push a finished partial tile to the rank(s) owning its rows,
and, on the owner, sum the partials that arrived. The owner's inbox holds one M/world x N slot per source rank and
alternates between two such inboxes by call parity: before a rank writes an inbox in call e, it has seen every rank
arrive at its own tiles in call e-1, so every owner has finished call e-2, the last reader of that inbox."""

import triton
import triton.language as tl

import iris
from ..gemm import tile_origins


@triton.jit
def push_partial(
    acc,                                            # the tile's fp32 partial
    INBOX,                                          # the owners' inboxes (world x M_LOCAL x N)
    pid_m, pid_n,                                   # the tile
    M, N, M_LOCAL,                                  # problem size, rows per rank
    flags, tile,                                    # per-tile arrival counts, the tile's number
    cur_rank, world_size, heap_bases,               # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,   # tile
    INSIDE: tl.constexpr = tl.constexpr(False),     # acc starts at gemm.tile_origins (the GEMM's INSIDE)
):
    """INBOX[src=cur_rank] rows of each owner <- this tile's rows; then count one arrival at each owner. INSIDE: an
    edge tile's acc was computed on boxes moved inside the operands; only the tile's own rows and columns go out."""
    m0, n0 = tile_origins(pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, INSIDE)
    rm = m0 + tl.arange(0, BLOCK_M)
    rn = n0 + tl.arange(0, BLOCK_N)
    own = (rm >= pid_m * BLOCK_M)[:, None] & (rn >= pid_n * BLOCK_N)[None, :]
    val = acc.to(INBOX.dtype.element_ty)
    lo = pid_m * BLOCK_M // M_LOCAL
    hi = (tl.minimum(pid_m * BLOCK_M + BLOCK_M, M) - 1) // M_LOCAL
    for owner in range(lo, hi + 1):
        row = rm - owner * M_LOCAL
        ptrs = INBOX + (cur_rank * M_LOCAL + row)[:, None] * N + rn[None, :]
        mask = ((rm // M_LOCAL) == owner)[:, None] & (rm < M)[:, None] & (rn < N)[None, :] & own
        iris.store(ptrs, val, cur_rank, owner, heap_bases, mask=mask)
    for owner in range(lo, hi + 1):
        iris.signal(flags + tile, 1, cur_rank, owner, heap_bases, op="add")


@triton.jit
def reduce_owned(
    INBOX, C, stride_cm,                            # this rank's inbox; output, its row stride
    pid_m, pid_n,                                   # the tile
    M, N, M_LOCAL,                                  # problem size, rows per rank
    flags, tile, epoch,                             # per-tile arrival counts, the tile's number, the call's epoch
    cur_rank, world_size, heap_bases,               # this rank, the ranks, the symmetric heap
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,   # tile
):
    """C (this rank's rows) <- sum over sources of the inbox slots, for the part of the tile this rank owns."""
    iris.wait(flags + tile, world_size * epoch, cur_rank, heap_bases, cmp="ge")
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row = rm - cur_rank * M_LOCAL
    mask = ((row >= 0) & (row < M_LOCAL) & (rm < M))[:, None] & (rn < N)[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for src in range(world_size):
        acc += tl.load(INBOX + (src * M_LOCAL + row)[:, None] * N + rn[None, :], mask=mask).to(tl.float32)
    tl.store(C + row[:, None] * stride_cm + rn[None, :], acc.to(C.dtype.element_ty), mask=mask)


@triton.jit
def owns(pid_m, M, M_LOCAL, cur_rank, BLOCK_M: tl.constexpr):
    lo = pid_m * BLOCK_M
    hi = tl.minimum(lo + BLOCK_M, M) - 1
    return (lo // M_LOCAL <= cur_rank) & (cur_rank <= hi // M_LOCAL)


def inbox(p):
    ws = p.workspace(in_kernel=True, inbox=((2, p.world * p.m_local, p.n), p.c.dtype))
    return ws, ws["inbox"]  # the kernel picks this call's half (gemm.call_slot)
