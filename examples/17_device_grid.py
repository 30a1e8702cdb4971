"""17 · One process, every device: `iris.Grid` launches one kernel on all devices of an `iris.DeviceGroup` at once,
no rank processes. Kernels see the same device context (`iris.DEVICE_CONTEXT` becomes each device's context), so a
kernel written for ranks runs unchanged on a device grid. Here: each device computes its rows of C = A @ B and
stores them into every device's C.

Teaches: `iris.DeviceGroup`, symmetric allocation on a group (`group.zeros`: one copy per device, same offset),
`@iris.jit` kernels indexed by `iris.Grid(grid, devices=group)`, `iris.DEVICE_CONTEXT`, `group.synchronize()`.
On the CPU backend the group simulates 2 devices and runs their launches one after the other.

    python examples/17_device_grid.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris


@iris.jit
def rows_matmul_kernel(A, B, C, ML, N, K, context, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """This device's ML rows of C (A holds them, ML x K) into every device's C, at rows rank*ML..."""
    dctx = iris.DeviceContext.initialize(context)
    rm, rn = tl.program_id(0) * BM + tl.arange(0, BM), tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(A + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < ML) & (rk[None, :] < K), other=0.0)
        b = tl.load(B + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    mask = (rm[:, None] < ML) & (rn[None, :] < N)
    for d in range(dctx.world):
        dctx.store(C + (dctx.rank * ML + rm[:, None]) * N + rn[None, :], acc, d, mask=mask)


def run_grid(devices, m_local=32, n=32, k=32):
    group = iris.DeviceGroup(devices, heap_size=1 << 22)
    world = group.num_devices
    g = torch.Generator().manual_seed(17)
    a, b = torch.randn(m_local * world, k, generator=g), torch.randn(k, n, generator=g)
    A, B, C = group.zeros(m_local, k), group.zeros(k, n), group.zeros(m_local * world, n)
    for d in range(world):
        A.shards[d].copy_(a[d * m_local:(d + 1) * m_local])
        B.shards[d].copy_(b)
        C.shards[d].fill_(float("nan"))
    grid = iris.Grid((triton.cdiv(m_local, 32), triton.cdiv(n, 32)), devices=group)
    rows_matmul_kernel[grid](A, B, C, m_local, n, k, iris.DEVICE_CONTEXT, BM=32, BN=32, BK=32)
    group.synchronize()
    ref = a.double() @ b.double()
    for d in range(world):
        err = ((C.shards[d].cpu().double() - ref).norm() / ref.norm()).item()
        assert err < 1e-2, (d, err)
    return world


def main(ctx=None):
    """Under iris.spawn (and the tests) only rank 0 drives the grid; run directly, this process does."""
    if ctx is not None and ctx.get_rank() != 0:
        return
    devices = None if iris.BACKEND == "cuda" else 2  # every visible GPU, or 2 simulated devices
    world = run_grid(devices)
    print(f"ok: one launch per device on {world} devices from one process, every device holds all of C")


if __name__ == "__main__":
    main()
