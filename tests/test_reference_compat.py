"""A program written for the reference (ROCm Iris) runs here: the calls its own unit tests make, with their argument
orders, keywords, expected results and exception types (our code; the reference's tests are run on the side, see
results/current/reference_compat/summary.md)."""

import os
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

import iris

N, BLOCK = 13, 16


# ---------------------------------------------------------------------------------------------------- host API
def r_host(ctx):
    rank, world = ctx.get_rank(), ctx.get_num_ranks()
    on_heap = ctx._Iris__on_symmetric_heap  # the reference's tests call the private name
    # sizes: varargs, tuple, list, nested tuple, scalar, empty
    for size, shape in [((2, 3, 4), (2, 3, 4)), (((2, 3, 4),), (2, 3, 4)), (([2, 5],), (2, 5)),
                        ((((2, 3),),), (2, 3)), (((),), ()), ((0,), (0,))]:
        t = ctx.zeros(*size)
        assert t.shape == shape and t.dtype == torch.get_default_dtype() and on_heap(t), (size, t.shape)
    assert ctx.is_symmetric(ctx.zeros(0)) and ctx.is_symmetric(ctx.empty(0, dtype=torch.int8))
    assert not ctx.is_symmetric(torch.zeros(0)) and not ctx.is_symmetric(torch.zeros(3))
    # keywords: layout, memory_format, pin_memory, out, requires_grad
    assert ctx.zeros(2, 4, layout=torch.strided).layout == torch.strided
    assert ctx.empty(3, memory_format=torch.contiguous_format, pin_memory=False).shape == (3,)
    out = ctx.allocate(6, torch.float32)
    out.fill_(5)
    z = ctx.zeros(2, 3, out=out)
    assert z.data_ptr() == out.data_ptr() and z.shape == (2, 3) and torch.all(z == 0)
    same = ctx.zeros(100, dtype=torch.float32)
    assert ctx.zeros(100, dtype=torch.float32, out=same) is same
    o = ctx.ones(2, 3, dtype=torch.int32, out=ctx.allocate(6, torch.int32))
    assert o.dtype == torch.int32 and torch.all(o == 1)
    r = ctx.randn(2, 2, dtype=torch.float32, requires_grad=True)
    assert r.requires_grad and on_heap(r)
    # linspace: steps as a count or a one-element sequence (flattened), complex inferred, tensor ends
    for steps in (5, (5,), [5], ((5,),)):
        assert torch.allclose(ctx.linspace(0.0, 1.0, steps).cpu(), torch.linspace(0.0, 1.0, 5))
    assert ctx.linspace(0.0 + 0.0j, 1.0 + 1.0j, 5).dtype == torch.complex64
    assert ctx.linspace(torch.tensor(0.0), torch.tensor(1.0), 3).tolist() == [0.0, 0.5, 1.0]
    assert torch.all(ctx.linspace(0.0, 1.0, 5, out=ctx.allocate(5, torch.float32)).cpu() ==
                     torch.linspace(0.0, 1.0, 5))
    assert ctx.arange(0, 10, 2, dtype=torch.int32).tolist() == [0, 2, 4, 6, 8]
    assert ctx.full((2,), 3).dtype == torch.int64 and ctx.full((2,), True).dtype == torch.bool
    # errors: the reference's exception types and messages
    errors = []
    for call in (lambda: ctx.zeros(2, 4, layout=torch.sparse_coo),
                 lambda: ctx.empty(2, memory_format=torch.channels_last),
                 lambda: ctx.empty(2, pin_memory=True),
                 lambda: ctx.zeros(3, 3, out=ctx.allocate(4, torch.float32)),
                 lambda: ctx.zeros(3, 3, dtype=torch.float32, out=ctx.allocate(9, torch.int32)),
                 lambda: ctx.zeros(3, 3, out=torch.zeros(3, 3)),
                 lambda: ctx.zeros(3, device="meta"),
                 lambda: ctx.linspace(0.0, 1.0, (5, 6))):
        try:
            call()
            errors.append(None)
        except (RuntimeError, ValueError, TypeError) as err:
            errors.append((type(err).__name__, isinstance(err, RuntimeError), str(err)))
    # broadcast: the reference's source_rank=, torch's src=; non-source ranks may pass None
    got = [ctx.broadcast({"k": 42} if rank == 0 else None, source_rank=0),
           ctx.broadcast(f"from {rank}", src=world - 1),
           ctx.broadcast(torch.arange(4) * 10 if rank == 0 else None, 0).tolist()]
    return errors, got


def test_host_api_as_the_reference_calls_it(ranks2):
    for errors, got in ranks2.run(r_host):
        names = [e and e[0] for e in errors]
        assert names == ["ValueError", "ValueError", "ValueError", "RuntimeError", "RuntimeError", "RuntimeError",
                         "DeviceMismatchError", "ValueError"], errors
        assert errors[6][1], "a device mismatch is a RuntimeError, as in the reference"
        assert "The output tensor has 4 elements, but 9 are required" in errors[3][2]
        assert "The output tensor has dtype torch.int32, but torch.float32 is required" in errors[4][2]
        assert "The output tensor is not on the symmetric heap" in errors[5][2]
        assert got == [{"k": 42}, "from 1", [0, 10, 20, 30]]


def test_allocator_type():
    with pytest.raises(ValueError, match="allocator_type='cuda_malloc'"):
        iris.iris(1 << 20, allocator_type="cuda_malloc")  # refused before any collective setup


# ---------------------------------------------------------------------------------------------------- device API
@triton.jit
def rma_keywords_kernel(data, out, cur_rank: tl.constexpr, num_ranks: tl.constexpr, n, heap_bases,
                        BLOCK: tl.constexpr):
    """Each rank reads from / writes to its partner with the reference's keywords; out has 5 rows of BLOCK."""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    partner = (cur_rank + 1) % num_ranks
    # load: other= fills masked lanes; volatile and hint as the reference's tests pass them
    v = iris.load(data + offs, cur_rank, partner, heap_bases, mask=m, other=-1.0, volatile=True,
                  hint=16)  # (PTX forbids .volatile with a cache modifier: copy below passes .cg)
    tl.store(out + offs, v)
    # get (reads to_rank's copy, from_rank is the current rank), store, put, copy with their cache modifiers
    iris.get(data + offs, out + BLOCK + offs, cur_rank, partner, heap_bases, mask=m, other=0.0,
             load_cache_modifier=".cv", store_cache_modifier=".wt")
    iris.store(out + 2 * BLOCK + offs, v * 2, cur_rank, partner, heap_bases, mask=m, cache_modifier=".wb", hint=16)
    iris.put(data + offs, out + 3 * BLOCK + offs, cur_rank, partner, heap_bases, mask=m,
             load_cache_modifier=".ca", store_cache_modifier=".cs")
    iris.copy(data + offs, out + 4 * BLOCK + offs, partner, cur_rank, cur_rank, heap_bases, mask=m,
              load_cache_modifier=".cg", store_cache_modifier=".wb", hint=(16,))


def r_rma_keywords(ctx):
    rank, world = ctx.get_rank(), ctx.get_num_ranks()
    results = []
    for it in range(3):  # fresh inputs and poisoned outputs every call
        data = ctx.as_symmetric(torch.arange(N, dtype=torch.float32) + 100 * rank + 1000 * it)
        out = ctx.full((5 * BLOCK,), -7.0, dtype=torch.float32)
        ctx.barrier()
        rma_keywords_kernel[(1,)](data, out, rank, world, N, ctx.get_heap_bases(), BLOCK=BLOCK)
        ctx.barrier()
        results.append(out.cpu().view(5, BLOCK).tolist())
    return results


def test_rma_keywords(ranks2):
    got = ranks2.run(r_rma_keywords)
    for rank, per_iter in enumerate(got):
        partner = (rank + 1) % 2
        for it, rows in enumerate(per_iter):
            mine = [float(i + 100 * rank + 1000 * it) for i in range(N)]
            theirs = [float(i + 100 * partner + 1000 * it) for i in range(N)]
            assert rows[0] == theirs + [-1.0] * (BLOCK - N)  # load with other=
            assert rows[1] == theirs + [-7.0] * (BLOCK - N)  # get: masked lanes untouched
            # written by the partner into this rank: its load of my data, doubled; its put/copy of its own data
            assert rows[2][:N] == [2 * x for x in mine] and rows[2][N:] == [-7.0] * (BLOCK - N)
            assert rows[3][:N] == theirs and rows[4][:N] == theirs


@triton.jit
def atomics_kernel(buf, cur_rank: tl.constexpr, num_ranks: tl.constexpr, heap_bases, BLOCK: tl.constexpr):
    """Every rank applies each of the nine atomics to every rank's buf (rows of BLOCK int32), reference order."""
    offs = tl.arange(0, BLOCK)
    one = tl.full([BLOCK], 1, tl.int32)
    for target_rank in range(num_ranks):
        iris.atomic_add(buf + offs, one, cur_rank, target_rank, heap_bases, mask=offs < BLOCK, sem="acq_rel",
                        scope="sys")
        iris.atomic_sub(buf + BLOCK + offs, one, cur_rank, target_rank, heap_bases, sem="relaxed", scope="gpu")
        iris.atomic_max(buf + 2 * BLOCK + offs, one * (cur_rank + 1), cur_rank, target_rank, heap_bases,
                        sem="release", scope="sys")
        iris.atomic_min(buf + 3 * BLOCK + offs, one * (cur_rank + 1), cur_rank, target_rank, heap_bases,
                        sem="acquire", scope="cta")
        iris.atomic_or(buf + 4 * BLOCK + offs, one << cur_rank, cur_rank, target_rank, heap_bases)
        iris.atomic_and(buf + 5 * BLOCK + offs, ~(one << cur_rank), cur_rank, target_rank, heap_bases)
        iris.atomic_xor(buf + 6 * BLOCK + offs, one << cur_rank, cur_rank, target_rank, heap_bases)
        iris.atomic_xchg(buf + 7 * BLOCK + offs, one * 5, cur_rank, target_rank, heap_bases, sem="acq_rel",
                         scope="sys")
        iris.atomic_cas(buf + 8 * BLOCK + offs, one * 0, one * 9, cur_rank, target_rank, heap_bases, sem="acq_rel",
                        scope="sys")


def r_atomics(ctx):
    rank, world = ctx.get_rank(), ctx.get_num_ranks()
    init = torch.tensor([0, 0, 0, 100, 0, -1, 0, 0, 0], dtype=torch.int32).repeat_interleave(BLOCK)
    buf = ctx.as_symmetric(init)
    ctx.barrier()
    atomics_kernel[(1,)](buf, rank, world, ctx.get_heap_bases(), BLOCK=BLOCK)
    ctx.barrier()
    return buf.view(9, BLOCK).cpu().tolist()


def test_nine_atomics(ranks2):
    w = 2
    expect = [w, -w, w, 1, (1 << w) - 1, ~((1 << w) - 1), (1 << w) - 1, 5, 9]
    for rows in ranks2.run(r_atomics):
        assert [row[0] for row in rows] == expect and all(len(set(row)) == 1 for row in rows), rows


# ---------------------------------------------------------------------------------------------------- import order
def test_triton_imported_before_iris():
    """The reference's tests import triton first: the CPU backend must still interpret tl.zeros, tl.sum, ..."""
    code = """
import torch
import triton
import triton.language as tl
import iris

@triton.jit
def k(x, N: tl.constexpr):
    o = tl.arange(0, N)
    z = tl.zeros([N], dtype=tl.float32) + tl.cdiv(7, 2)
    tl.store(x + o, z + tl.sum(z, axis=0))

x = torch.zeros(8)
k[(1,)](x, N=8)
assert x.tolist() == [36.0] * 8, x
print("ok", iris.BACKEND)
"""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(IRIS_BACKEND="cpu", PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                         check=False)
    if iris.BACKEND != "cpu":
        pytest.skip("the CPU backend's import order only")
    assert res.returncode == 0 and "ok cpu" in res.stdout, res.stderr[-2000:]
