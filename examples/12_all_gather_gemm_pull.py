"""12 · AllGather + GEMM, pull. C = gather(A) @ B with A split by rows over ranks and B split by columns: each rank
needs every rank's rows of A. Pull: the GEMM loads each row block of A directly from the rank that owns it, inside
its K loop. No flags (A is ready before the launch), no staging buffer; remote loads are paid by every tile that
needs them.

Teaches: remote loads in a compute loop (`dctx.load` of a 2-D tile), ownership by index arithmetic.

    python examples/12_all_gather_gemm_pull.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris


@triton.jit
def ag_gemm_pull_kernel(A, B, C, ML, NL, K, context, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C (world*ML x NL) tile; rows r*ML..(r+1)*ML-1 of the gathered A live in rank r's A (ML x K). BM divides ML."""
    dctx = iris.DeviceContext.initialize(context)
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm, rn = pid_m * BM + tl.arange(0, BM), pid_n * BN + tl.arange(0, BN)
    owner = (pid_m * BM) // ML
    local_rows = rm - owner * ML
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = dctx.load(A + local_rows[:, None] * K + rk[None, :], owner, mask=rk[None, :] < K, other=0.0)
        b = tl.load(B + rk[:, None] * NL + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < NL), other=0.0)
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * NL + rn[None, :], acc, mask=rn[None, :] < NL)


def main(ctx, m_local=32, n_local=32, k=64, bm=32, bn=32, bk=32):
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    assert m_local % bm == 0, "a tile's rows must come from one rank"
    g = torch.Generator().manual_seed(12)
    a, b = torch.randn(m_local * world, k, generator=g), torch.randn(k, n_local * world, generator=g)
    a_mine = ctx.as_symmetric(a[rank * m_local:(rank + 1) * m_local])  # on the heap: peers read it
    b_mine = b[:, rank * n_local:(rank + 1) * n_local].contiguous().to(ctx.get_device())
    c = torch.full((m_local * world, n_local), float("nan"), device=ctx.get_device())  # local output: anywhere
    ctx.barrier()
    grid = (world * m_local // bm, triton.cdiv(n_local, bn))
    ag_gemm_pull_kernel[grid](a_mine, b_mine, c, m_local, n_local, k, ctx.get_device_context(), BM=bm, BN=bn, BK=bk)
    ctx.barrier()  # peers may still be reading my A
    ref = a.double() @ b[:, rank * n_local:(rank + 1) * n_local].double()
    err = ((c.cpu().double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
    if rank == 0:
        print(f"ok: AllGather + GEMM (pull), C {tuple(c.shape)} per rank, relative error {err:.1e}")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
