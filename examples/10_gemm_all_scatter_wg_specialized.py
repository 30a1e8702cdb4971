"""10 · GEMM + All-Scatter, pattern 4 of 4: workgroup-specialized. One kernel, two kinds of programs: programs
0..GEMM_PROGRAMS-1 compute tiles and raise a per-tile flag; the remaining programs wait for those flags and push the
tiles to the peers. Like 09 without a second kernel or stream: the split of SMs between compute and communication
is one launch parameter.

Teaches: role selection by `tl.program_id`, flags between programs of one kernel. Rule for spin-waits: a waiting
program may only wait for lower-numbered programs (the interpreter runs programs in order; on a GPU the whole grid
must be resident), so communication programs come last.

    python examples/10_gemm_all_scatter_wg_specialized.py
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
def gemm_scatter_kernel(A, B, C, ready, epoch, M, NL, K, context, GEMM_PROGRAMS: tl.constexpr, BM: tl.constexpr,
                        BN: tl.constexpr, BK: tl.constexpr):
    dctx = iris.DeviceContext.initialize(context)
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(NL, BN)
    tiles = tl.cdiv(M, BM) * tiles_n
    if pid < GEMM_PROGRAMS:  # compute role
        for tile in range(pid, tiles, GEMM_PROGRAMS):
            pid_m, pid_n = tile // tiles_n, tile % tiles_n
            acc = matmul_tile(A, B, pid_m, pid_n, M, NL, K, BM, BN, BK)
            rm, rn = pid_m * BM + tl.arange(0, BM), pid_n * BN + tl.arange(0, BN)
            tl.store(C + rm[:, None] * (NL * dctx.world) + dctx.rank * NL + rn[None, :], acc,
                     mask=(rm[:, None] < M) & (rn[None, :] < NL))
            dctx.signal(ready + tile, epoch, dctx.rank)
    else:  # communication role
        comm = tl.num_programs(0) - GEMM_PROGRAMS
        for tile in range(pid - GEMM_PROGRAMS, tiles, comm):
            dctx.wait(ready + tile, epoch)
            rm, rn = (tile // tiles_n) * BM + tl.arange(0, BM), (tile % tiles_n) * BN + tl.arange(0, BN)
            mask = (rm[:, None] < M) & (rn[None, :] < NL)
            ptrs = C + rm[:, None] * (NL * dctx.world) + dctx.rank * NL + rn[None, :]
            acc = tl.load(ptrs, mask=mask)
            for i in range(1, dctx.world):
                dctx.store(ptrs, acc, (dctx.rank + i) % dctx.world, mask=mask)


def main(ctx, m=64, n_local=32, k=64, bm=32, bn=32, bk=32):
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    g = torch.Generator().manual_seed(10)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n_local * world, generator=g)
    dev = ctx.get_device()
    a_d, b_d = a.to(dev), b[:, rank * n_local:(rank + 1) * n_local].contiguous().to(dev)
    tiles = triton.cdiv(m, bm) * triton.cdiv(n_local, bn)
    ready = ctx.zeros(tiles, dtype=torch.int32)
    c = ctx.full((m, n_local * world), float("nan"))
    ctx.barrier()
    gemm_programs, comm_programs = max(1, tiles // 2), 1  # a GPU run would give GEMM most of its SMs
    gemm_scatter_kernel[(gemm_programs + comm_programs,)](a_d, b_d, c, ready, 1, m, n_local, k,
                                                         ctx.get_device_context(), GEMM_PROGRAMS=gemm_programs,
                                                         BM=bm, BN=bn, BK=bk)
    ctx.barrier()
    ref = a.double() @ b.double()
    err = ((c.cpu().double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
    if rank == 0:
        print(f"ok: GEMM + All-Scatter, workgroup-specialized ({gemm_programs} GEMM + {comm_programs} comm "
              f"programs), relative error {err:.1e}")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
