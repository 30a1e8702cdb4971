"""Device grid (one process, several simulated devices on the CPU backend) and partitioned tensors (one process per
rank): kernels see their device id, reach peers through the usual device API, find the owner of any global index;
uneven splits; bad input."""

import pytest
import torch

import iris
import triton
import triton.language as tl
from conftest import ON_GPU


@iris.jit
def ring_kernel(X, flags, OUT, N, cur_rank, world_size, heap_bases, BLOCK: tl.constexpr):
    """Device d writes its id into X on the next device and signals it; devices > 0 wait for their predecessor's
    value (the interpreter runs devices in order: waits go to lower-numbered devices only)."""
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    nxt = (cur_rank + 1) % world_size
    if cur_rank > 0:
        iris.wait(flags, 1, cur_rank, heap_bases, cmp="eq")
        tl.store(OUT + offs, tl.load(X + offs, mask=mask) * 10 + cur_rank, mask=mask)
    if nxt > cur_rank:
        iris.store(X + offs, tl.zeros((BLOCK,), tl.int32) + cur_rank + 1, cur_rank, nxt, heap_bases, mask=mask)
        iris.signal(flags, 1, cur_rank, nxt, heap_bases)


@pytest.mark.skipif(ON_GPU, reason="simulated devices are the CPU backend's; GPUs are covered by the device run")
@pytest.mark.parametrize("devices", [2, 3])
def test_device_grid_one_process(devices):
    group = iris.DeviceGroup(devices, heap_size=1 << 20)
    x, flags, out = group.zeros(40, dtype=torch.int32), group.zeros(1, dtype=torch.int32), group.zeros(40,
                                                                                                      dtype=torch.int32)
    for shard in out.shards:
        shard.fill_(-7)  # poisoned
    ring_kernel[iris.Grid((1,), devices=group)](x, flags, out, 40, iris.DEVICE_ID, iris.NUM_DEVICES,
                                                iris.HEAP_BASES, BLOCK=64)
    group.synchronize()
    assert (out[0] == -7).all()  # device 0 only sends
    for d in range(1, devices):
        assert (out[d] == d * 10 + d).all(), (d, out[d][:4])


def test_grid_rejects_bad_input():
    with pytest.raises(TypeError, match="must be an iris.DeviceGroup"):
        iris.Grid((1,), devices=[0, 1])
    with pytest.raises(ValueError, match="expected at least one simulated device" if not ON_GPU else "visible GPUs"):
        iris.DeviceGroup(0 if not ON_GPU else [99])


@triton.jit
def gather_kernel(X, FULL, M, N, shard_rows, cur_rank, heap_bases, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    rows = iris.partition.global_ptr(X, tl.minimum(rm, M - 1), shard_rows, N, cur_rank, heap_bases)
    tl.store(FULL + rm[:, None] * N + rn[None, :], tl.load(rows[:, None] + rn[None, :], mask=mask), mask=mask)


def r_partitioned(ctx, m, n):
    w, r = ctx.get_num_ranks(), ctx.get_rank()
    full = torch.arange(m * n, dtype=torch.float32, device=ctx.get_device()).reshape(m, n) * 0.5 - 3
    x = iris.partitioned(ctx, (m, n), dim=0).copy_from(full)
    start, stop = x.bounds(r)
    host_ok = (x.local.shape[0] == stop - start and x.owner(m - 1) == w - 1 and
               all(x.bounds(x.owner(i))[0] + x.local_index(i) == i for i in range(m)))
    gathered = ctx.zeros(m, n)
    gathered.fill_(float("nan"))
    ctx.barrier()
    gather_kernel[(triton.cdiv(m, 16),)](x.local, gathered, m, n, x.shard_size, r, ctx.get_heap_bases(),
                                         BLOCK_M=16, BLOCK_N=triton.next_power_of_2(n))
    ctx.barrier()
    cols = iris.partitioned(ctx, (n, 3, m), dim=2).copy_from(full.t().reshape(n, 1, m).expand(n, 3, m))
    return host_ok, bool(torch.equal(gathered, full)), bool(torch.equal(x.full(), full)) and bool(
        torch.equal(cols.full(), full.t().reshape(n, 1, m).expand(n, 3, m)))


@pytest.mark.parametrize("m", [64, 37])
def test_partitioned_tensor_owner_and_offsets(ranks, m):
    # 37 rows do not split evenly over 2 or 4 ranks: the last shard is shorter.
    for res in ranks.run(r_partitioned, m, 24):
        assert res == (True, True, True), res


def r_partition_errors(ctx):
    msgs = []
    for bad in (lambda: iris.partitioned(ctx, (1, 8), dim=0), lambda: iris.partitioned(ctx, (8, 8), dim=2),
                lambda: iris.partitioned(ctx, (8, 8)).owner(8)):
        try:
            bad()
            msgs.append("no error")
        except (ValueError, IndexError) as err:
            msgs.append(str(err))
    return msgs


def test_partitioned_bad_input(ranks2):
    for msgs in ranks2.run(r_partition_errors):
        assert "cannot split dimension 0 of size 1 over 2 ranks" in msgs[0]
        assert "dim=2 is out of range" in msgs[1] and "index 8 is out of range" in msgs[2], msgs
