"""05 · Barriers on the device: order work across ranks without the host.

Teaches: `ctx.device_barrier()` (a tiny kernel on the current stream: all ranks' earlier kernels are done before
later ones start; no host sync, CUDA-graph capturable) versus `ctx.barrier()` (host: synchronize, then a process
barrier), and `dctx.barrier()` inside a kernel (every rank's program on the same tile has arrived; needs a
context with a tile workspace: `ctx.get_device_context(tiles=..., block=...)`).

    python examples/05_device_barrier.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton
import triton.language as tl

import iris


@triton.jit
def write_kernel(slots, value, context):
    """slots[my rank] on every rank <- value."""
    dctx = iris.DeviceContext.initialize(context)
    for r in range(dctx.world):
        dctx.store(slots + dctx.rank, value, r)


@triton.jit
def read_kernel(slots, total, context, WORLD: tl.constexpr):
    tl.store(total, tl.sum(tl.load(slots + tl.arange(0, WORLD))))


@triton.jit
def write_barrier_read_kernel(slots, total, value, context, WORLD: tl.constexpr):
    """The same in one kernel: write to every rank, barrier inside the kernel, read what everyone wrote."""
    dctx = iris.DeviceContext.initialize(context)
    for r in range(dctx.world):
        dctx.store(slots + dctx.rank, value, r)
    dctx.barrier()
    tl.store(total, tl.sum(tl.load(slots + tl.arange(0, WORLD))))


def main(ctx):
    rank, world = ctx.get_rank(), ctx.get_num_ranks()
    width = triton.next_power_of_2(world)
    slots, total = ctx.zeros(width, dtype=torch.int32), ctx.zeros(1, dtype=torch.int32)
    ctx.barrier()
    plain = ctx.get_device_context()
    write_kernel[(1,)](slots, rank + 1, plain)
    ctx.device_barrier()  # the GPU waits for every rank's write_kernel; the host does not wait at all
    read_kernel[(1,)](slots, total, plain, WORLD=width)
    ctx.barrier()
    assert total.item() == world * (world + 1) // 2, total
    with_ws = ctx.get_device_context(tiles=1, block=16, dtype=torch.int32)
    write_barrier_read_kernel[(1,)](slots, total, 10 * (rank + 1), with_ws, WORLD=width)
    ctx.barrier()
    assert total.item() == 10 * world * (world + 1) // 2, total
    if rank == 0:
        print("ok: device_barrier between kernels and dctx.barrier() inside one kernel both ordered the writes")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
