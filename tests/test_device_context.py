"""iris.DeviceContext: RMA, atomics, flags and tile collectives through one kernel argument, against torch
references in float64, fresh inputs and poisoned outputs on every call (epochs and flags must not go stale)."""

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.errors import InterpreterError

import iris

BLOCK, POISON = 32, -7.0


@triton.jit
def rma_kernel(x, out, counter, context, n, BLOCK: tl.constexpr):
    """out rows: 0 load from next, 1 get from next, 2 (written by prev) store, 3 (written by prev) put,
    4 copy from prev's x into my out row 4 issued by me; counter: atomic adds from every rank."""
    dctx = iris.DeviceContext.initialize(context)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    nxt = (dctx.rank + 1) % dctx.world
    prv = (dctx.rank + dctx.world - 1) % dctx.world
    tl.store(out + offs, dctx.load(x + offs, nxt, mask=m, other=-1.0))
    dctx.get(x + offs, out + BLOCK + offs, nxt, mask=m)
    dctx.store(out + 2 * BLOCK + offs, tl.load(x + offs, mask=m) * 2, nxt, mask=m)
    dctx.put(x + offs, out + 3 * BLOCK + offs, nxt, mask=m)
    dctx.copy(x + offs, out + 4 * BLOCK + offs, prv, dctx.rank, mask=m)
    for r in range(dctx.world_size):
        dctx.atomic_add(counter, dctx.rank + 1, r, sem="release", scope="sys")


def r_rma(ctx):
    rank, world = ctx.get_rank(), ctx.get_num_ranks()
    dctx = ctx.get_device_context()
    assert dctx.dtype == torch.int64 and dctx[0] == rank and dctx[1] == world  # the reference's layout
    assert dctx.cpu()[2:2 + world].tolist() == ctx.get_heap_bases().cpu().tolist()
    n = 21
    for it in range(3):
        x = ctx.as_symmetric(torch.randn(n, dtype=torch.float64).float())
        out = ctx.full((5 * BLOCK,), POISON, dtype=torch.float32)
        counter = ctx.zeros(1, dtype=torch.int32)
        ctx.barrier()
        rma_kernel[(1,)](x, out, counter, dctx, n, BLOCK=BLOCK)
        ctx.barrier()
        xs = [t.double() for t in iris_all_gather(ctx, x)]
        nxt, prv = xs[(rank + 1) % world], xs[(rank - 1) % world]
        o = out.view(5, BLOCK).double().cpu()
        assert torch.equal(o[0, :n], nxt) and torch.all(o[0, n:] == -1), it
        assert torch.equal(o[1, :n], nxt) and torch.all(o[1, n:] == POISON), it
        assert torch.equal(o[2, :n], 2 * prv) and torch.equal(o[3, :n], prv) and torch.equal(o[4, :n], prv), it
        assert counter.item() == world * (world + 1) // 2, counter
    return True


def iris_all_gather(ctx, t):
    return [ctx.broadcast(t.cpu(), r) for r in range(ctx.get_num_ranks())]


def test_rma_and_atomics(ranks2):
    assert ranks2.run(r_rma) == [True, True]


@triton.jit
def collectives_kernel(x, out, context, world: tl.constexpr, rank: tl.constexpr, BLOCK: tl.constexpr):
    """Program t works on tile t; out per program: [all_reduce, all_reduce two_shot, broadcast from 1, reduce to 0,
    sendrecv from prev, all_gather (world blocks), reduce_scatter chunk]."""
    dctx = iris.DeviceContext.initialize(context, rank, world)  # the reference's constexpr form
    t = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + t * BLOCK + offs)
    base = out + t * (6 + world) * BLOCK
    tl.store(base + offs, dctx.all_reduce(v))
    tl.store(base + BLOCK + offs, dctx.all_reduce(v, variant="two_shot"))
    tl.store(base + 2 * BLOCK + offs, dctx.broadcast(v, 1))
    tl.store(base + 3 * BLOCK + offs, dctx.reduce(v, 0, op="max"))
    tl.store(base + 4 * BLOCK + offs, dctx.sendrecv(v, (dctx.rank + 1) % dctx.world, (rank + world - 1) % world))
    dctx.barrier()
    dctx.all_gather(v, base + 5 * BLOCK)
    dctx.reduce_scatter(v, base + (5 + world) * BLOCK)


def r_collectives(ctx, tiles):
    rank, world = ctx.get_rank(), ctx.get_num_ranks()
    dctx = ctx.get_device_context(tiles=tiles, block=BLOCK, dtype=torch.float32)
    width = (6 + world) * BLOCK
    for it in range(2):  # the same tiles again: epochs continue from the last launch
        x = ctx.as_symmetric(torch.randint(-8, 8, (tiles * BLOCK,)).float())
        out = ctx.full((tiles * width,), POISON, dtype=torch.float32)
        ctx.barrier()
        collectives_kernel[(tiles,)](x, out, dctx, world, rank, BLOCK=BLOCK)
        ctx.barrier()
        xs = torch.stack([t.double() for t in iris_all_gather(ctx, x)]).view(world, tiles, BLOCK)
        o = out.view(tiles, width).double().cpu()
        chunk = ((BLOCK + world - 1) // world + 7) // 8 * 8  # iris.tile.reduce_scatter chunks
        for t in range(tiles):
            s = xs[:, t].sum(0)
            assert torch.equal(o[t, :BLOCK], s) and torch.equal(o[t, BLOCK:2 * BLOCK], s), (it, t)
            assert torch.equal(o[t, 2 * BLOCK:3 * BLOCK], xs[1, t]), (it, t)
            expect_reduce = xs[:, t].max(0).values if rank == 0 else xs[rank, t]
            assert torch.equal(o[t, 3 * BLOCK:4 * BLOCK], expect_reduce), (it, t)
            assert torch.equal(o[t, 4 * BLOCK:5 * BLOCK], xs[(rank - 1) % world, t]), (it, t)
            assert torch.equal(o[t, 5 * BLOCK:(5 + world) * BLOCK], xs[:, t].reshape(-1)), (it, t)
            lo, hi = rank * chunk, min((rank + 1) * chunk, BLOCK)
            assert torch.equal(o[t, (5 + world) * BLOCK:(5 + world) * BLOCK + hi - lo], s[lo:hi]), (it, t)
    return True


def test_tile_collectives(ranks2):
    assert ranks2.run(r_collectives, 2) == [True, True]


def test_tile_collectives_4ranks(ranks4):
    assert ranks4.run(r_collectives, 1) == [True] * 4


@triton.jit
def wrong_block_kernel(context):
    dctx = iris.DeviceContext.initialize(context)
    dctx.all_reduce(tl.zeros((64,), tl.float32))


def r_wrong_block(ctx):
    dctx = ctx.get_device_context(tiles=1, block=BLOCK)
    try:
        wrong_block_kernel[(1,)](dctx)
    except InterpreterError as err:  # the interpreter raises the check's ValueError, wrapped
        return "slots are 128 bytes" in str(err)
    return False


@pytest.mark.skipif(iris.BACKEND != "cpu", reason="compiled, the check is a device assertion (TRITON_DEBUG=1 only)")
def test_wrong_block_is_reported(ranks2):
    assert ranks2.run(r_wrong_block) == [True, True]


def r_bad_args(ctx):
    msgs = []
    for kw in ({"tiles": 1}, {"workspace": "x"}):
        try:
            ctx.get_device_context(**kw)
        except (ValueError, TypeError) as err:
            msgs.append(str(err))
    return msgs


def test_bad_arguments(ranks2):
    for msgs in ranks2.run(r_bad_args):
        assert "tiles= and block= go together" in msgs[0] and "iris.tile.Workspace" in msgs[1]
