"""load / store / get / put / copy between every pair of ranks, every dtype, masked edges."""

import pytest
import torch
import triton
import triton.language as tl

import iris
from conftest import FLOAT_DTYPES

N, BLOCK, POISON = 37, 64, -7


@triton.jit
def rma_kernel(src, dst, n, cur, world, heap_bases, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    for peer in range(world):
        if OP == "load":
            tl.store(dst + peer * n + offs, iris.load(src + offs, cur, peer, heap_bases, mask=m), mask=m)
        elif OP == "get":
            iris.get(src + offs, dst + peer * n + offs, cur, peer, heap_bases, mask=m)
        elif OP == "store":
            iris.store(dst + cur * n + offs, tl.load(src + offs, mask=m), cur, peer, heap_bases, mask=m)
        elif OP == "put":
            iris.put(src + offs, dst + cur * n + offs, cur, peer, heap_bases, mask=m)
        else:  # copy: from `peer`'s src into the next rank's dst[cur], a third party issuing it
            iris.copy(src + offs, dst + cur * n + offs, peer, (peer + 1) % world, cur, heap_bases, mask=m)


def values(rank, dtype):
    return (torch.arange(N, dtype=torch.float64) + 1 + 64 * rank).to(dtype)


def r_rma(ctx, op, dtype_name):
    dtype = getattr(torch, dtype_name)
    world, rank = ctx.num_ranks, ctx.cur_rank
    src = ctx.as_symmetric(values(rank, dtype))
    dst = ctx.full((world * N + BLOCK,), POISON, dtype=dtype)  # tail = guard: masked lanes must not write
    ctx.barrier()
    rma_kernel[(1,)](src, dst, N, rank, world, ctx.get_heap_bases(), OP=op, BLOCK=BLOCK)
    ctx.barrier()
    got = dst.cpu().double()
    slots = got[: world * N].view(world, N)
    for p in range(world):
        expect_from = (rank - 1) % world if op == "copy" else p
        assert torch.equal(slots[p], values(expect_from, dtype).double()), (op, rank, p, slots[p])
    assert torch.all(got[world * N:] == POISON), "a masked lane was written"
    return True


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + ["int32", "int64"])
@pytest.mark.parametrize("op", ["load", "store", "get", "put", "copy"])
def test_rma_all_pairs(ranks, op, dtype):
    assert ranks.run(r_rma, op, dtype) == [True] * ranks.world


@triton.jit
def translate_kernel(x, out, cur, peer, heap_bases):
    p = iris.translate(x, cur, peer, heap_bases)
    tl.store(out, (p.to(tl.uint64) - x.to(tl.uint64)).to(tl.int64))


def r_translate(ctx):
    x = ctx.zeros(8, dtype=torch.float32)
    out = ctx.zeros(ctx.num_ranks, dtype=torch.int64)
    bases = ctx.get_heap_bases().cpu().tolist()
    for peer in range(ctx.num_ranks):
        translate_kernel[(1,)](x, out[peer:], ctx.cur_rank, peer, ctx.get_heap_bases())
    ctx.barrier()
    return out.cpu().tolist() == [b - bases[ctx.cur_rank] for b in bases]


def test_translate_is_a_base_difference(ranks):
    assert all(ranks.run(r_translate))
