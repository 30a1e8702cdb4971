"""Allocation API, symmetry of offsets, and clear errors for bad input."""

import pytest
import torch

import iris


def r_allocations(ctx):
    dev = ctx.get_device()
    g = torch.Generator(device=dev).manual_seed(5)
    made = {
        "zeros": ctx.zeros(3, 5, dtype=torch.float16),
        "zeros_tuple": ctx.zeros((2, 3), dtype=torch.int32),
        "ones": ctx.ones(7, dtype=torch.int64),
        "empty": ctx.empty(4, 4),
        "full": ctx.full((2, 2), 2.5, dtype=torch.float32),
        "full_int": ctx.full((3,), 7),
        "arange": ctx.arange(2, 20, 3, dtype=torch.int32),
        "arange_end": ctx.arange(5),
        "linspace": ctx.linspace(0, 1, 5),
        "rand": ctx.rand(100, generator=g),
        "randn": ctx.randn(10, 10, dtype=torch.float64),
        "randint": ctx.randint(3, 9, (50,)),
        "randint_high": ctx.randint(4, (6,)),
        "uniform": ctx.uniform((64,), low=-2.0, high=-1.0),
        "as_symmetric": ctx.as_symmetric(torch.arange(6, dtype=torch.float32).view(2, 3)),
        "grad": ctx.zeros(3, requires_grad=True),
    }
    made["zeros_like"] = ctx.zeros_like(made["randn"])
    base = ctx.get_heap_bases()[ctx.cur_rank].item()
    out = {}
    for name, t in made.items():
        assert ctx.is_symmetric(t), name
        assert (t.data_ptr() - base) % 256 == 0, name
        out[name] = (t.data_ptr() - base, tuple(t.shape), str(t.dtype), t.detach().cpu().double().flatten().tolist(),
                     t.requires_grad)
    out["not_symmetric"] = ctx.is_symmetric(torch.zeros(3, device=dev)) or ctx.is_symmetric("x")
    out["rank"], out["world"] = ctx.get_rank(), ctx.get_num_ranks()
    out["cu"] = ctx.get_cu_count()
    out["bases"] = ctx.get_heap_bases().cpu().tolist()
    out["bases_dtype"] = str(ctx.get_heap_bases().dtype)
    return out


def test_allocation_api(ranks):
    results = ranks.run(r_allocations)
    r0 = results[0]
    for rank, res in enumerate(results):
        assert res["rank"] == rank and res["world"] == ranks.world and res["cu"] >= 1
        assert res["bases_dtype"] == "torch.int64" and len(res["bases"]) == ranks.world
        assert not res["not_symmetric"]
        for name in r0:
            if isinstance(r0[name], tuple):
                assert res[name][0] == r0[name][0], f"{name}: offsets differ across ranks"
    offset, shape, dtype, vals, grad = r0["zeros"]
    assert shape == (3, 5) and dtype == "torch.float16" and vals == [0] * 15 and not grad
    assert r0["zeros_tuple"][1] == (2, 3) and r0["zeros_tuple"][2] == "torch.int32"
    assert r0["ones"][3] == [1] * 7 and r0["ones"][2] == "torch.int64"
    assert r0["empty"][1] == (4, 4) and r0["empty"][2] == "torch.float32"
    assert r0["full"][3] == [2.5] * 4 and r0["full_int"][2] == "torch.int64" and r0["full_int"][3] == [7] * 3
    assert r0["arange"][3] == list(range(2, 20, 3)) and r0["arange_end"][3] == [0, 1, 2, 3, 4]
    assert r0["linspace"][3] == [0, 0.25, 0.5, 0.75, 1.0]
    assert all(0 <= v < 1 for v in r0["rand"][3]) and len(set(r0["rand"][3])) > 90
    assert r0["randn"][2] == "torch.float64" and 0.3 < torch.tensor(r0["randn"][3]).std() < 3
    assert all(3 <= v < 9 for v in r0["randint"][3]) and len(set(r0["randint"][3])) > 3
    assert all(0 <= v < 4 for v in r0["randint_high"][3])
    assert all(-2 <= v < -1 for v in r0["uniform"][3])
    assert r0["as_symmetric"][3] == [0, 1, 2, 3, 4, 5] and r0["as_symmetric"][1] == (2, 3)
    assert r0["grad"][4] and r0["zeros_like"][1] == (10, 10) and r0["zeros_like"][2] == "torch.float64"


def _ce(ctx, use):
    with ctx.copy_engine() as ce:
        use(ce)


def r_expect_error(ctx, case):
    calls = {
        "negative size": lambda: ctx.zeros(3, -1),
        "float size": lambda: ctx.zeros(2.5),
        "bad dtype": lambda: ctx.zeros(3, dtype="float32"),
        "bad device": lambda: ctx.zeros(3, device="meta"),
        "randint range": lambda: ctx.randint(5, 5, (3,)),
        "randint arity": lambda: ctx.randint(3),
        "as_symmetric non-tensor": lambda: ctx.as_symmetric([1, 2]),
        "exhausted": lambda: ctx.empty(1 << 40, dtype=torch.uint8),
        "bad backend": lambda: iris.iris(1 << 20, backend="tpu"),
        "other backend": lambda: iris.iris(1 << 20, backend="cuda" if ctx.backend == "cpu" else "cpu"),
        "bad heap size": lambda: iris.heap._SymmetricHeap(0),
        "copy_engine src off heap":
            lambda: _ce(ctx, lambda ce: ce.get(ctx.zeros(4), torch.zeros(4, device=ctx.device), 0)),
        "copy_engine size": lambda: _ce(ctx, lambda ce: ce.get(ctx.zeros(4), ctx.zeros(5), 0)),
        "copy_engine rank": lambda: _ce(ctx, lambda ce: ce.get(ctx.zeros(4), ctx.zeros(4), ctx.get_num_ranks())),
        "copy_engine flag": lambda: _ce(ctx, lambda ce: ce.get(ctx.zeros(4), ctx.zeros(4), 0, flag=ctx.zeros(2))),
        "copy_engine after then": lambda: _ce(ctx, lambda ce: (ce.then(lambda: None),
                                                               ce.write(ctx.zeros(1, dtype=torch.int32), 1))),
    }
    try:
        calls[case]()
    except Exception as err:
        return type(err).__name__, str(err)
    return None, "no error"


ERRORS = {
    "negative size": ("ValueError", "non-negative integers"),
    "float size": ("ValueError", "non-negative integers"),
    "bad dtype": ("TypeError", "torch.dtype"),
    "bad device": ("DeviceMismatchError", "heap lives on"),
    "randint range": ("ValueError", "must be greater than low"),
    "randint arity": ("TypeError", "(high, size) or (low, high, size)"),
    "as_symmetric non-tensor": ("TypeError", "expects a torch.Tensor"),
    "exhausted": ("HeapExhausted", "requested 1099511627776 bytes"),
    "bad backend": ("ValueError", "expected 'cpu' or 'cuda'"),
    "other backend": ("RuntimeError", "before importing"),
    "bad heap size": ("ValueError", "positive number of bytes"),
    "copy_engine src off heap": ("ValueError", "src must live on the symmetric heap"),
    "copy_engine size": ("ValueError", "same dtype and size"),
    "copy_engine rank": ("ValueError", "rank 2 is not a rank"),
    "copy_engine flag": ("ValueError", "one-element int32 tensor"),
    "copy_engine after then": ("RuntimeError", "nothing may be enqueued after then()"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_input_raises_clearly(ranks2, case):
    name, text = ERRORS[case]
    for got_name, msg in ranks2.run(r_expect_error, case):
        assert got_name == name and text in msg, (case, got_name, msg)
    if case == "exhausted":
        assert "bytes free of" in msg


def r_heap_free_bytes(ctx):
    try:
        ctx.empty(ctx.heap.size, dtype=torch.uint8)
    except iris.HeapExhausted as err:
        free = ctx.heap.size - (-(-ctx.heap.offset // 256) * 256)
        return f"{free} bytes free" in str(err)
    return False


def test_exhaustion_names_free_bytes(ranks2):
    assert ranks2.run(r_heap_free_bytes) == [True, True]


def r_broadcast(ctx):
    obj = ctx.broadcast({"rank": ctx.cur_rank, "x": [1, 2]} if ctx.cur_rank == 1 else None, 1)
    t = ctx.broadcast(torch.full((3,), float(ctx.cur_rank), device=ctx.get_device()), 1)
    return obj, t.cpu().tolist()


def test_broadcast(ranks):
    for obj, t in ranks.run(r_broadcast):
        assert obj == {"rank": 1, "x": [1, 2]} and t == [1.0, 1.0, 1.0]


def r_scratch(ctx):
    before = ctx.heap.offset
    with ctx.scratch():
        ctx.zeros(1000)
        inside = ctx.heap.offset
    return before, inside, ctx.heap.offset


def test_scratch_releases_allocations(ranks2):
    for before, inside, after in ranks2.run(r_scratch):
        assert inside > before and after == before


def r_copy_engine(ctx):
    """get: dst[r] <- rank r's row `rank` of a heap tensor (a different random one per rank and call), one flag per
    copy. put: after a stream wait that the main stream releases, row `rank` of every peer's inbox <- this rank's
    row, raising the peer's flag; then() adds 1 to what the gets brought. Eagerly; then through a plan (recorded on
    its first call, replayed on the next two: each must move that call's data); then (on GPUs) the plan replayed
    into a captured CUDA graph, replayed twice."""
    world, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    src = ctx.zeros(world, 37)
    dst = torch.full((world, 37), float("nan"), device=dev)
    inbox = ctx.full((world, 37), float("nan"))
    flags, inflags, go = (ctx.zeros(world, dtype=torch.int32) for _ in range(3))

    def rows(call):
        return [torch.randn(world, 37, generator=torch.Generator().manual_seed(100 * call + r)) for r in range(world)]

    def copies(key=None):
        with ctx.copy_engine() as ce:
            go[0:1].fill_(1)  # on the current stream, as a kernel would raise it (launched before the wait)

            def operations():
                for r in range(world):
                    ce.get(dst[r], src[rank], r, flag=flags[r:r + 1])
                ce.wait(go[0:1], 1)
                for r in range(world):
                    if r != rank:
                        ce.put(inbox[rank], src[rank], r, flag=inflags[rank:rank + 1])
                ce.write(go[0:1], 0)

            ce.plan(key, operations)
            ce.then(lambda: dst.add_(1))  # after the gets: it sees what they brought

    def check(call):
        ctx.barrier()  # every peer's puts have landed here
        mine = rows(call)
        got_in = [torch.equal(inbox[r].cpu(), mine[r][r]) for r in range(world) if r != rank]
        want = torch.stack([mine[r][rank] for r in range(world)])
        ok = (torch.equal(dst.cpu(), want + 1) and flags.tolist() == [1] * world and all(got_in) and
              inflags.tolist() == [int(r != rank) for r in range(world)] and go.tolist()[0] == 0)
        dst.fill_(float("nan"))
        inbox.fill_(float("nan"))
        flags.zero_()
        inflags.zero_()
        ctx.barrier()
        return ok

    results, plans = [], []
    for call, key in enumerate([None, "plan", "plan", "plan"]):
        src.copy_(rows(call)[rank])
        ctx.barrier()
        copies(key)
        results.append(check(call))
        plans.append([len(ops) for ops in ctx.replay.plans.values()])
    if ctx.backend == "cuda":
        src.copy_(rows(9)[rank])
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            copies("plan")
        for _ in range(2):
            ctx.barrier()
            graph.replay()
            results.append(check(9))
    # one plan, recorded on the first keyed call: gets and their flags, a wait, puts and their flags, a write
    results.append(plans == [[], [4 * world], [4 * world], [4 * world]])
    return results


def test_copy_engine_gets_puts_waits_and_raises_flags(ranks):
    for got in ranks.run(r_copy_engine):
        assert got and all(got), got


def r_copy_engine_abandoned(ctx):
    """An exception inside the block (here a bad call after a wait that will never be met) ends the CPU worker
    without waiting out the poll's deadline: the first error is reported and no thread is left."""
    import threading
    import time

    before, t0 = threading.active_count(), time.monotonic()
    never = ctx.zeros(1, dtype=torch.int32)
    try:
        with ctx.copy_engine() as ce:
            ce.wait(never, 1)
            ce.get(ctx.zeros(4), ctx.zeros(5), 0)
    except ValueError as err:
        return "same dtype and size" in str(err), threading.active_count() == before, time.monotonic() - t0 < 5
    return "no error"


@pytest.mark.skipif(iris.BACKEND != "cpu", reason="the CPU worker's shutdown; a GPU stream wait cannot be withdrawn")
def test_copy_engine_abandoned_on_error(ranks2):
    assert ranks2.run(r_copy_engine_abandoned) == [(True, True, True)] * 2
