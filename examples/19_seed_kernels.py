"""19 · The two in-kernel examples of the lecture notes that started this project, as written there but with the
device context: (1) a matmul whose output rows are sharded over devices, the partition expressed inside the kernel
through the device id; (2) an all-reduce called inside a kernel like any tl.* operation.

    notes                                   here
    device_id = iris.device_id()            dctx = iris.DeviceContext.initialize(context); device_id = dctx.rank
    x_reduced = iris.all_reduce(x, op=...)  x_reduced = dctx.all_reduce(x, op="sum")

Both kernels also run on an iris.Grid of devices in one process (17_device_grid.py), with iris.DEVICE_CONTEXT.

    python examples/19_seed_kernels.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris


@triton.jit
def matmul_k(a_ptr, b_ptr, c_ptr, m, n, k, num_gpus, context, BM: tl.constexpr, BN: tl.constexpr,
             BK: tl.constexpr):
    dctx = iris.DeviceContext.initialize(context)
    device_id = dctx.rank                    # which GPU am I on?
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    # Each device handles a horizontal shard of the output
    rows_per_device = m // num_gpus
    global_pid_m = device_id * (rows_per_device // BM) + pid_m
    # Compute the tile as before, using global_pid_m for row addressing (A is whole on every device; C is the shard)
    rm = global_pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, k, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * k + rk[None, :], mask=rk[None, :] < k, other=0.0)
        b = tl.load(b_ptr + rk[:, None] * n + rn[None, :], mask=(rk[:, None] < k) & (rn[None, :] < n), other=0.0)
        acc += tl.dot(a, b)
    local_rm = pid_m * BM + tl.arange(0, BM)
    tl.store(c_ptr + local_rm[:, None] * n + rn[None, :], acc, mask=rn[None, :] < n)


@triton.jit
def allreduce_add_k(x_ptr, out_ptr, n, context, BLOCK_SIZE: tl.constexpr):
    dctx = iris.DeviceContext.initialize(context)
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    # Sum x across all devices, result broadcast to every device
    x_reduced = dctx.all_reduce(x, op="sum")
    tl.store(out_ptr + offsets, x_reduced, mask=mask)


def main(ctx, m=64, n=32, k=32, size=1000, block=256):
    world, rank = ctx.get_num_ranks(), ctx.get_rank()
    dev = ctx.get_device()
    g = torch.Generator().manual_seed(19)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    bm = 32
    assert m % (world * bm) == 0, "rows per device must be whole tiles"
    c_shard = torch.full((m // world, n), float("nan"), device=dev)
    grid = (triton.cdiv(m // world, bm), triton.cdiv(n, 32))
    matmul_k[grid](a.to(dev), b.to(dev), c_shard, m, n, k, world, ctx.get_device_context(), BM=bm, BN=32, BK=32)
    ref = (a.double() @ b.double())[rank * m // world:(rank + 1) * m // world]
    assert ((c_shard.cpu().double() - ref).norm() / ref.norm()).item() < 1e-2

    xs = torch.randn(world, size, generator=g)  # every rank's x, known to all for the check
    out = torch.full((size,), float("nan"), device=dev)
    programs = triton.cdiv(size, block)
    dctx = ctx.get_device_context(tiles=programs, block=block, dtype=torch.float32)
    allreduce_add_k[(programs,)](xs[rank].to(dev), out, size, dctx, BLOCK_SIZE=block)
    assert torch.allclose(out.cpu().double(), xs.double().sum(0), atol=1e-5)
    ctx.barrier()
    if rank == 0:
        print(f"ok: row-sharded matmul over {world} devices via device_id, and an all-reduce inside a kernel")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
