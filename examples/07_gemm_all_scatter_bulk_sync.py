"""07 · GEMM + All-Scatter, pattern 1 of 4: bulk-synchronous. C = A @ B with A replicated and B split by columns:
rank r computes C's column block r, and every rank ends with all of C. First every program computes, then every
program communicates: simplest, and nothing overlaps (08-10 overlap more and more).

Teaches: a tiled GEMM in Triton (its tile loop is in gemm_tile.py, shared by 07-10), then a scatter kernel of remote
stores (`dctx.store` of a tile into every rank).

    python examples/07_gemm_all_scatter_bulk_sync.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris
from examples.gemm_tile import matmul_tile  # the local tile loop, the same in examples 07-10


@triton.jit
def gemm_kernel(A, B, C, M, NL, K, context, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """My column block of C (local), one tile per program."""
    dctx = iris.DeviceContext.initialize(context)
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = matmul_tile(A, B, pid_m, pid_n, M, NL, K, BM, BN, BK)
    rm, rn = pid_m * BM + tl.arange(0, BM), pid_n * BN + tl.arange(0, BN)
    N = NL * dctx.world
    tl.store(C + rm[:, None] * N + dctx.rank * NL + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < NL))


@triton.jit
def scatter_kernel(C, M, NL, context, BM: tl.constexpr, BN: tl.constexpr):
    """My column block of C, tile by tile, into every peer's C."""
    dctx = iris.DeviceContext.initialize(context)
    rm, rn = tl.program_id(0) * BM + tl.arange(0, BM), tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < NL)
    ptrs = C + rm[:, None] * (NL * dctx.world) + dctx.rank * NL + rn[None, :]
    tile = tl.load(ptrs, mask=mask)
    for i in range(1, dctx.world):
        dctx.store(ptrs, tile, (dctx.rank + i) % dctx.world, mask=mask)


def make_problem(ctx, m, n_local, k):
    """The same seeded A and B on every rank; this rank's column block of B; the float64 reference."""
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    g = torch.Generator().manual_seed(7)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n_local * world, generator=g)
    dev = ctx.get_device()
    b_mine = b[:, rank * n_local:(rank + 1) * n_local].contiguous()
    return a.to(dev), b_mine.to(dev), a.double() @ b.double()


def check(ctx, c, ref, what):
    err = ((c.cpu().double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, f"{what}: relative error {err}"  # fp32 inputs; tf32 tensor cores on GPUs
    if ctx.get_rank() == 0:
        print(f"ok: {what}, C {tuple(c.shape)} on every rank, relative error {err:.1e}")


def main(ctx, m=64, n_local=32, k=64, bm=32, bn=32, bk=32):
    a, b, ref = make_problem(ctx, m, n_local, k)
    c = ctx.full((m, n_local * ctx.get_num_ranks()), float("nan"))
    dctx = ctx.get_device_context()
    ctx.barrier()  # every C is poisoned before any peer writes into it
    grid = (triton.cdiv(m, bm), triton.cdiv(n_local, bn))
    gemm_kernel[grid](a, b, c, m, n_local, k, dctx, BM=bm, BN=bn, BK=bk)   # all programs compute ...
    scatter_kernel[grid](c, m, n_local, dctx, BM=bm, BN=bn)               # ... then all communicate
    ctx.barrier()  # every peer's tiles have landed
    check(ctx, c, ref, "GEMM + All-Scatter, bulk-synchronous")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
