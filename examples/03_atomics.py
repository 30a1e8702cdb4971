"""03 · Atomics on peers' memory: counters, maxima and a lock, each returning the old value.

Teaches: `dctx.atomic_add/sub/xchg/cas/and/or/xor/min/max(ptr, val, to_rank, sem=, scope=)`. Memory order `sem`
(relaxed, acquire, release, acq_rel) and `scope` (cta, gpu, sys): between GPUs use scope="sys".

    python examples/03_atomics.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch
import triton

import iris


@triton.jit
def atomics_kernel(counter, biggest, owner, tickets, context):
    """Every program of every rank: +1 on every rank's counter, its rank into every rank's maximum, a try to take
    rank 0's `owner` slot with compare-and-swap, and a ticket from rank 0's dispenser (atomic add returns the old
    value: a unique ticket per caller)."""
    dctx = iris.DeviceContext.initialize(context)
    for r in range(dctx.world):
        dctx.atomic_add(counter, 1, r, sem="relaxed", scope="sys")
        dctx.atomic_max(biggest, dctx.rank, r, sem="relaxed", scope="sys")
    dctx.atomic_cas(owner, -1, dctx.rank, 0, sem="acq_rel", scope="sys")  # only the first one succeeds
    t = dctx.atomic_add(tickets, 1, 0, sem="relaxed", scope="sys")       # old value = my ticket
    dctx.atomic_or(tickets + 1 + t, 1, 0, sem="relaxed", scope="sys")       # mark it taken (exactly once)


def main(ctx, programs=3):
    rank, world = ctx.get_rank(), ctx.get_num_ranks()
    counter, biggest = ctx.zeros(1, dtype=torch.int32), ctx.zeros(1, dtype=torch.int32)
    owner = ctx.full((1,), -1, dtype=torch.int32)
    tickets = ctx.zeros(1 + world * programs, dtype=torch.int32)
    ctx.barrier()
    atomics_kernel[(programs,)](counter, biggest, owner, tickets, ctx.get_device_context())
    ctx.barrier()
    assert counter.item() == world * programs and biggest.item() == world - 1
    if rank == 0:
        assert 0 <= owner.item() < world
        assert tickets[0].item() == world * programs and torch.all(tickets[1:] == 1), tickets  # no ticket twice
        print(f"ok: {world * programs} increments, max {biggest.item()}, lock taken by rank {owner.item()}, "
              f"{world * programs} distinct tickets")


if __name__ == "__main__":
    iris.spawn(main, 2, heap_size=1 << 26)
