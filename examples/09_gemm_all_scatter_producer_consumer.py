"""09 · GEMM + All-Scatter, pattern 3 of 4: producer-consumer. A GEMM kernel (producer) writes each finished tile
locally and raises that tile's flag; a scatter kernel (consumer) on a second stream waits for each flag and pushes
the tile to every peer. The two kernels run at the same time on a GPU, each with its own programs.

Teaches: per-tile flags between two kernels of one rank (`dctx.signal(flag, epoch, my_rank)`, `dctx.wait`), the
epoch trick (flags count calls, never reset), two CUDA streams. Both grids must be resident together (the consumer
spins): keep them within the SM count. On the CPU backend there are no streams: the kernels run one after the other.

    python examples/09_gemm_all_scatter_producer_consumer.py
"""

import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris
from examples.gemm_tile import matmul_tile  # the local tile loop, the same in examples 07-10


@triton.jit
def tile_ptrs(C, tile, M, NL, world, rank, BM: tl.constexpr, BN: tl.constexpr):
    tiles_n = tl.cdiv(NL, BN)
    rm, rn = (tile // tiles_n) * BM + tl.arange(0, BM), (tile % tiles_n) * BN + tl.arange(0, BN)
    return C + rm[:, None] * (NL * world) + rank * NL + rn[None, :], (rm[:, None] < M) & (rn[None, :] < NL)


@triton.jit
def producer(A, B, C, ready, epoch, M, NL, K, context, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    dctx = iris.DeviceContext.initialize(context)
    tiles_n = tl.cdiv(NL, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, tl.num_programs(0)):
        acc = matmul_tile(A, B, tile // tiles_n, tile % tiles_n, M, NL, K, BM, BN, BK)
        ptrs, mask = tile_ptrs(C, tile, M, NL, dctx.world, dctx.rank, BM, BN)
        tl.store(ptrs, acc, mask=mask)
        dctx.signal(ready + tile, epoch, dctx.rank)  # release: the tile is stored before the flag rises


@triton.jit
def consumer(C, ready, epoch, M, NL, context, BM: tl.constexpr, BN: tl.constexpr):
    dctx = iris.DeviceContext.initialize(context)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tl.cdiv(NL, BN), tl.num_programs(0)):
        dctx.wait(ready + tile, epoch)  # acquire
        ptrs, mask = tile_ptrs(C, tile, M, NL, dctx.world, dctx.rank, BM, BN)
        acc = tl.load(ptrs, mask=mask)
        for i in range(1, dctx.world):
            dctx.store(ptrs, acc, (dctx.rank + i) % dctx.world, mask=mask)


def main(ctx, m=64, n_local=32, k=64, bm=32, bn=32, bk=32, calls=2):
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    tiles = triton.cdiv(m, bm) * triton.cdiv(n_local, bn)
    ready = ctx.zeros(tiles, dtype=torch.int32)
    c = ctx.zeros(m, n_local * world)
    dctx = ctx.get_device_context()
    gemm_programs = comm_programs = max(1, min(tiles, ctx.get_cu_count() // 2))
    side = torch.cuda.Stream() if ctx.get_device().type == "cuda" else None
    for epoch in range(1, calls + 1):  # fresh inputs each call; flags at `epoch` mean "this call's tile is ready"
        g = torch.Generator().manual_seed(epoch)
        a, b = torch.randn(m, k, generator=g), torch.randn(k, n_local * world, generator=g)
        dev = ctx.get_device()
        a_d, b_d = a.to(dev), b[:, rank * n_local:(rank + 1) * n_local].contiguous().to(dev)
        c.fill_(float("nan"))
        ctx.barrier()
        producer[(gemm_programs,)](a_d, b_d, c, ready, epoch, m, n_local, k, dctx, BM=bm, BN=bn, BK=bk)
        if side is not None:
            side.wait_stream(torch.cuda.current_stream())  # the consumer sees this call's poisoned C and epoch
        with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
            consumer[(comm_programs,)](c, ready, epoch, m, n_local, dctx, BM=bm, BN=bn)
        if side is not None:
            torch.cuda.current_stream().wait_stream(side)
        ctx.barrier()
        ref = a.double() @ b.double()
        err = ((c.cpu().double() - ref).norm() / ref.norm()).item()
        assert err < 1e-2, (epoch, err)
    if rank == 0:
        print(f"ok: GEMM + All-Scatter, producer-consumer, {calls} calls (flags at epoch {calls}), "
              f"relative error {err:.1e}")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
