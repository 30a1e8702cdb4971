"""11 · GEMM + All-Reduce, one-shot. C = A @ B with the K dimension split over ranks (A by columns, B by rows):
every rank computes a partial C and the partials are summed. Here each program computes one tile of its partial,
publishes it in its own heap, tells every rank "tile t is ready" (a counter per tile), waits until all ranks'
partials of tile t are ready, then reads them all and sums: one kernel, no separate all-reduce.

Teaches: counting arrivals with `dctx.signal(flag, 1, rank, op="add")`, waiting for `world * epoch` arrivals, and
summing remote tiles with `dctx.load(ptr, rank)`.

    python examples/11_gemm_all_reduce_one_shot.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris


@triton.jit
def gemm_all_reduce_kernel(A, B, P, C, arrived, epoch, M, N, KL, context, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr):
    dctx = iris.DeviceContext.initialize(context)
    tiles_n = tl.cdiv(N, BN)
    tile = tl.program_id(0)
    rm, rn = (tile // tiles_n) * BM + tl.arange(0, BM), (tile % tiles_n) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, KL, BK):  # my partial: A[:, my K slice] @ B[my K slice, :]
        rk = k0 + tl.arange(0, BK)
        a = tl.load(A + rm[:, None] * KL + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < KL), other=0.0)
        b = tl.load(B + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < KL) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    ptrs = rm[:, None] * N + rn[None, :]
    tl.store(P + ptrs, acc, mask=mask)                  # publish my partial tile in my heap
    for r in range(dctx.world):
        dctx.signal(arrived + tile, 1, r, op="add")     # +1 on every rank's counter of this tile
    dctx.wait(arrived + tile, dctx.world * epoch)       # all partials of this tile are published
    total = tl.zeros((BM, BN), tl.float32)
    for i in range(dctx.world):
        total += dctx.load(P + ptrs, (dctx.rank + i) % dctx.world, mask=mask, other=0.0)
    tl.store(C + ptrs, total, mask=mask)


def main(ctx, m=64, n=64, k=128, bm=32, bn=32, bk=32):
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    kl = k // world
    g = torch.Generator().manual_seed(11)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    dev = ctx.get_device()
    a_mine = a[:, rank * kl:(rank + 1) * kl].contiguous().to(dev)
    b_mine = b[rank * kl:(rank + 1) * kl].contiguous().to(dev)
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    partial, c = ctx.zeros(m, n), ctx.full((m, n), float("nan"))  # partials: on the heap (peers read them)
    arrived = ctx.zeros(tiles, dtype=torch.int32)
    ctx.barrier()
    gemm_all_reduce_kernel[(tiles,)](a_mine, b_mine, partial, c, arrived, 1, m, n, kl, ctx.get_device_context(),
                                     BM=bm, BN=bn, BK=bk)
    ctx.barrier()  # (a second call would also need this: peers may still read my partials)
    ref = a.double() @ b.double()
    err = ((c.cpu().double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
    if rank == 0:
        print(f"ok: GEMM + All-Reduce one-shot over {world} ranks, relative error {err:.1e}")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
