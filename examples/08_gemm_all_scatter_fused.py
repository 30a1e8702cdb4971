"""08 · GEMM + All-Scatter, pattern 2 of 4: fused sequential. One persistent kernel: each program loops over output
tiles, and as soon as a tile is computed it stores it into every rank's C. No second kernel, no flags; while one
program stores, the others still compute, so communication hides behind computation.

Teaches: a persistent grid (`for tile in range(pid, tiles, programs)`) and remote stores straight from registers.

    python examples/08_gemm_all_scatter_fused.py
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
def gemm_scatter_kernel(A, B, C, M, NL, K, context, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    dctx = iris.DeviceContext.initialize(context)
    tiles_n = tl.cdiv(NL, BN)
    tiles = tl.cdiv(M, BM) * tiles_n
    for tile in range(tl.program_id(0), tiles, tl.num_programs(0)):
        pid_m, pid_n = tile // tiles_n, tile % tiles_n
        acc = matmul_tile(A, B, pid_m, pid_n, M, NL, K, BM, BN, BK)
        rm, rn = pid_m * BM + tl.arange(0, BM), pid_n * BN + tl.arange(0, BN)
        mask = (rm[:, None] < M) & (rn[None, :] < NL)
        ptrs = C + rm[:, None] * (NL * dctx.world) + dctx.rank * NL + rn[None, :]
        for i in range(dctx.world):  # i = 0 is this rank: a local store through the same call
            dctx.store(ptrs, acc, (dctx.rank + i) % dctx.world, mask=mask)


def main(ctx, m=64, n_local=32, k=64, bm=32, bn=32, bk=32):
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    g = torch.Generator().manual_seed(8)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n_local * world, generator=g)
    dev = ctx.get_device()
    a_d, b_d = a.to(dev), b[:, rank * n_local:(rank + 1) * n_local].contiguous().to(dev)
    c = ctx.full((m, n_local * world), float("nan"))
    ctx.barrier()
    programs = min(ctx.get_cu_count(), triton.cdiv(m, bm) * triton.cdiv(n_local, bn))  # persistent: <= SMs
    gemm_scatter_kernel[(programs,)](a_d, b_d, c, m, n_local, k, ctx.get_device_context(), BM=bm, BN=bn, BK=bk)
    ctx.barrier()
    ref = a.double() @ b.double()
    err = ((c.cpu().double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
    if rank == 0:
        print(f"ok: GEMM + All-Scatter, fused sequential ({programs} persistent programs), relative error {err:.1e}")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
