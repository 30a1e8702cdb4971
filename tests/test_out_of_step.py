"""Ranks out of step (issue 29): mismatched calls are refused on every rank, a fault breaks the context and every
later call fails at once, float64 collectives are exact, and fault messages name the cause first."""

import os
import signal
import subprocess
import sys
import time
import traceback

import faults
import pytest
import torch
from conftest import ON_GPU

import fused_ops
import iris
from iris import collectives, consistency

HEAP = 1 << 20
F64 = torch.float64

# Per op, the shapes of a, b, c on one rank for global M x N x K and world w.
SHAPES = {
    "gemm_all_scatter": lambda m, n, k, w: ((m, k), (k, n // w), (m, n)),
    "gemm_all_reduce": lambda m, n, k, w: ((m, k // w), (k // w, n), (m, n)),
    "all_gather_gemm": lambda m, n, k, w: ((m // w, k), (k, n // w), (m, n // w)),
    "gemm_reduce_scatter": lambda m, n, k, w: ((m, k // w), (k // w, n), (m // w, n)),
}
VARIANT = {"gemm_all_scatter": ("bulk_sync", "fused_sequential"), "gemm_all_reduce": ("bulk_sync", "one_shot"),
           "all_gather_gemm": ("bulk_sync", "pull"), "gemm_reduce_scatter": ("bulk_sync", "fused")}
CASES = ("M", "N", "K", "dtype", "variant", "config")


def _op_call(ctx, op, case, odd):
    """The call rank `ctx` makes: rank 1 (odd=True) differs from the others in `case`."""
    w = ctx.get_num_ranks()
    m, n, k, dtype = 8 * w, 8 * w, 8 * w, torch.float32
    variant, config = VARIANT[op][0], fused_ops.Config(block_m=16)
    if odd:
        m, n, k = m * 2 if case == "M" else m, n * 2 if case == "N" else n, k * 2 if case == "K" else k
        dtype = torch.float16 if case == "dtype" else dtype
        variant = VARIANT[op][1] if case == "variant" else variant
        config = fused_ops.Config(block_m=32) if case == "config" else config
    sa, sb, sc = SHAPES[op](m, n, k, w)
    a, b = (torch.randn(shape, dtype=dtype, device=ctx.get_device()) for shape in (sa, sb))
    c = ctx.zeros(sc, dtype=dtype)
    return lambda: getattr(fused_ops, op)(ctx, a, b, c, variant=variant, config=config)


def _refused_everywhere(ctx, call, good_call):
    """call() must raise ConsistencyError naming every rank's value, fast; the context is then broken: good_call()
    raises ContextBroken at once. Returns the seconds the refusal took."""
    start = time.monotonic()
    with pytest.raises(iris.ConsistencyError) as info:
        call()
    took = time.monotonic() - start
    msg = str(info.value)
    assert all(f"rank {r}: " in msg for r in range(ctx.get_num_ranks())), msg
    start = time.monotonic()
    with pytest.raises(iris.ContextBroken, match="context broken by ConsistencyError.*create a new one"):
        good_call()
    assert time.monotonic() - start < 0.5
    faults.unbreak(ctx)  # the mismatch was caught before anything ran on the device: the ranks are still in step
    return took


def r_mismatched_ops(ctx):
    odd = ctx.get_rank() == 1
    times = []
    for op in SHAPES:
        for case in CASES:
            with ctx.scratch():  # the ranks allocated different sizes: scratch() lines their heaps up again
                good = _op_call(ctx, op, "none", False)
                times.append(_refused_everywhere(ctx, _op_call(ctx, op, case, odd), good))
    return max(times)


def test_mismatched_catalog_calls_refused_on_every_rank(ranks):
    slowest = ranks.run(r_mismatched_ops)
    assert max(slowest) < 5.0, slowest  # a host exchange, not a wait timeout


def _coll_call(ctx, name, case, odd):
    w = ctx.get_num_ranks()
    n = 64 * 2 if odd and case == "size" else 64
    dtype = torch.float64 if odd and case == "dtype" else torch.float32
    config = collectives.CollConfig(block=64) if odd and case == "config" else None
    variant = {"all_reduce": ("one_shot", "two_shot"), "all_gather": ("direct", "push"),
               "reduce_scatter": ("pull", "push"), "all_to_all": ("auto", "nccl"),
               "broadcast": ("auto", "nccl")}[name][1 if odd and case == "variant" else 0]
    if case == "op" and odd:  # another collective altogether
        name, variant = ("all_reduce", "one_shot") if name != "all_reduce" else ("broadcast", "auto")
    x = ctx.ones(n * w, dtype=dtype)
    out = ctx.zeros(n * w, dtype=dtype)
    if name == "all_reduce":
        return lambda: collectives.all_reduce(ctx, x, variant=variant, out=out, config=config)
    if name == "all_gather":
        return lambda: collectives.all_gather(ctx, out, x[:n], variant=variant, config=config)
    if name == "reduce_scatter":
        return lambda: collectives.reduce_scatter(ctx, out[:n], x, variant=variant, config=config)
    if name == "all_to_all":
        return lambda: collectives.all_to_all(ctx, out, x, variant=variant, config=config)
    src = 1 if odd and case == "src" else 0
    return lambda: collectives.broadcast(ctx, x, src=src, variant=variant, config=config)


def r_mismatched_collectives(ctx):
    odd = ctx.get_rank() == 1
    times = []
    for name in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"):
        for case in ("size", "dtype", "variant", "config", "op") + (("src",) if name == "broadcast" else ()):
            with ctx.scratch():
                good = _coll_call(ctx, name, "none", False)
                times.append(_refused_everywhere(ctx, _coll_call(ctx, name, case, odd), good))
    # A correct call afterwards works: nothing ran on the device.
    x = ctx.full((64,), float(ctx.get_rank() + 1), dtype=torch.float32)
    collectives.all_reduce(ctx, x, variant="one_shot")
    w = ctx.get_num_ranks()
    assert torch.equal(x.cpu(), torch.full((64,), w * (w + 1) / 2))
    return max(times)


def test_mismatched_collectives_refused_on_every_rank(ranks):
    slowest = ranks.run(r_mismatched_collectives)
    assert max(slowest) < 5.0, slowest


def r_debug_checks_every_call(ctx):
    """A signature each rank has seen before is not exchanged again (zero cost), so swapping them between ranks goes
    unseen by the first-call check; IRIS_DEBUG_CHECKS=1 (EVERY_CALL) checks every call and catches it."""
    small, large = ctx.ones(64, dtype=torch.float32), ctx.ones(128, dtype=torch.float32)
    collectives.all_reduce(ctx, small, variant="one_shot")
    collectives.all_reduce(ctx, large, variant="one_shot")
    consistency.EVERY_CALL = True
    try:
        mine = large if ctx.get_rank() == 1 else small
        took = _refused_everywhere(ctx, lambda: collectives.all_reduce(ctx, mine, variant="one_shot"),
                                   lambda: collectives.all_reduce(ctx, small, variant="one_shot"))
    finally:
        consistency.EVERY_CALL = False
    return took


def test_debug_checks_every_call(ranks2):
    assert max(ranks2.run(r_debug_checks_every_call)) < 5.0


def r_mismatched_expert_parallel(ctx):
    """moe_ffn (fused_ops/moe) and all_to_all_v make the same first-call check: tokens, hidden size, capacity or
    variant differing on rank 1 are refused on every rank before anything runs. Shapes no other test uses: a signature
    a rank has seen before is not exchanged again (the first-call check's documented blind spot)."""
    w, dev = ctx.get_num_ranks(), ctx.get_device()
    odd = ctx.get_rank() == 1

    def call(case):
        t, h = (7 if odd and case == "T" else 5), (24 if odd and case == "H" else 12)
        x = torch.randn(t, h, device=dev)
        idx = torch.randint(0, 2 * w, (t, 2), device=dev)
        wts = torch.full((t, 2), 0.5, device=dev)
        w1, w2 = torch.randn(2, h, 3, device=dev), torch.randn(2, 3, h, device=dev)
        variant = "bulk_sync" if odd and case == "variant" else "fused"
        capacity = 7 * w if odd and case == "capacity" else 5 * w
        return lambda: fused_ops.moe_ffn(ctx, x, idx, wts, w1, w2, variant=variant, capacity=capacity)

    def a2av(case):
        x = ctx.ones(10, 6 if odd and case == "width" else 3)
        out = ctx.zeros(11 if odd and case == "rows" else 10 * w, x.shape[1])
        variant = "nccl" if odd and case == "variant" else "pull"
        return lambda: collectives.all_to_all_v(ctx, out, x, [10 // w] * w, variant=variant)

    took = [_refused_everywhere(ctx, call(case), call("none")) for case in ("T", "H", "variant", "capacity")]
    for case in ("width", "rows", "variant"):
        with ctx.scratch():
            took.append(_refused_everywhere(ctx, a2av(case), a2av("none")))
    return max(took)


def test_mismatched_moe_and_all_to_all_v_calls_refused_on_every_rank(ranks2):
    assert max(ranks2.run(r_mismatched_expert_parallel)) < 5.0


# ------------------------------------------------------------------------------------------------ exact dtypes
def r_float64_and_int_sums(ctx):
    w, r = ctx.get_num_ranks(), ctx.get_rank()
    gen = torch.Generator().manual_seed(1234 + r)
    results = {}
    nccl = not ON_GPU or torch.cuda.device_count() >= w  # NCCL refuses ranks that share a GPU
    for variant in ("push", "push_two_shot", "ring", "one_shot", "two_shot") + (("nccl",) if nccl else ()):
        for _call in range(2):  # fresh inputs, poisoned outputs, twice in a row
            mine = 1.0 + torch.rand(300, dtype=F64, generator=gen) * 1e-9
            x = ctx.as_symmetric(mine)
            out = ctx.full((300,), float("nan"), dtype=F64)
            every = [torch.empty_like(mine) for _ in range(w)]
            torch.distributed.all_gather(every, mine)
            collectives.all_reduce(ctx, x, variant=variant, out=out)
            exact = torch.stack(every).sum(0)  # float64 reference; float32 accumulation is off by ~1e-7
            err = (out.cpu() - exact).abs().max().item()
            assert err < 1e-14, (variant, err)
        results[variant] = "exact"
    rs_in = ctx.as_symmetric(1.0 + torch.arange(4 * w, dtype=F64) * 1e-10 + r * 1e-12)
    for variant in ("push", "pull"):
        rs_out = ctx.full((4,), float("nan"), dtype=F64)
        collectives.reduce_scatter(ctx, rs_out, rs_in, variant=variant)
        ref = sum(1.0 + torch.arange(4 * w, dtype=F64) * 1e-10 + q * 1e-12 for q in range(w))[4 * r:4 * r + 4]
        assert (rs_out.cpu() - ref).abs().max().item() < 1e-14, variant
    with pytest.raises(ValueError, match="all_reduce/atomic supports"):
        collectives.all_reduce(ctx, ctx.ones(8, dtype=F64), variant="atomic")
    # int32 sums wrap at 32 bits, as torch's do (documented), int64 sums do not.
    big = ctx.full((32,), 2**31 - 1 - r, dtype=torch.int32)
    collectives.all_reduce(ctx, big, variant="one_shot")
    ref32 = torch.stack([torch.full((32,), 2**31 - 1 - q, dtype=torch.int32) for q in range(w)]).sum(0,
                                                                                                      dtype=torch.int32)
    assert torch.equal(big.cpu(), ref32)
    big64 = ctx.full((32,), 2**40 + r, dtype=torch.int64)
    collectives.all_reduce(ctx, big64, variant="push")
    assert torch.equal(big64.cpu(), torch.full((32,), w * 2**40 + w * (w - 1) // 2, dtype=torch.int64))
    return sorted(results)


def test_float64_collectives_exact_and_int_sums_like_torch(ranks):
    assert all(len(r) >= 5 for r in ranks.run(r_float64_and_int_sums))


# ------------------------------------------------------------------------------------------------ faults
def r_raise_between_calls(ctx):
    """Rank 1 raises between two all-reduces; the others, left waiting in the second, give up as soon as the pool
    reports rank 1's failure, and their next calls raise ContextBroken at once."""
    x = ctx.ones(64, dtype=torch.float32)
    c = ctx.zeros(8, 8, dtype=torch.float32)
    a, b = torch.randn(8, 4, device=ctx.get_device()), torch.randn(4, 8, device=ctx.get_device())
    faults.reset()
    start = time.monotonic()
    try:
        for _ in range(3):
            faults.point(ctx, rank=1, at=2)
            collectives.all_reduce(ctx, x, variant="push")
    except iris.PeerFailed as e:
        gave_up = time.monotonic() - start
        assert "rank 1 failed" in str(e), str(e)
    assert gave_up < 5.0, gave_up  # the abort record, not IRIS_WAIT_TIMEOUT_S (60 s in this pool)
    for call in (lambda: collectives.all_reduce(ctx, x), ctx.barrier, ctx.device_barrier, lambda: ctx.zeros(4),
                 lambda: fused_ops.gemm_all_reduce(ctx, a, b, c, variant="bulk_sync")):
        start = time.monotonic()
        with pytest.raises(iris.ContextBroken, match=r"context broken by PeerFailed.*at all_reduce; create a new one"):
            call()
        assert time.monotonic() - start < 0.5
    raise iris.ContextBroken("rank reports its broken context (a consequence)")


def r_raise_inside_call(ctx):
    """Rank 1 raises inside its second all-reduce, before its launch: the peers' device wait times out (the pool sees
    no failure: rank 1 catches its error), the context is broken on every rank, and the next calls fail at once."""
    x = ctx.ones(64, dtype=torch.float32)
    faults.reset()
    caught = None
    with faults.wait_timeout(2.0), faults.inside(collectives, "_on_stream", rank=1, at=2):
        try:
            for _ in range(3):
                collectives.all_reduce(ctx, x, variant="push")
        except (faults.InjectedFault, iris.DeviceWaitTimeout) as e:
            caught = e
    assert caught is not None
    if ctx.get_rank() != 1:  # one clean DeviceWaitTimeout, not a chain of InterpreterError reprs
        assert type(caught) is iris.DeviceWaitTimeout, repr(caught)
        text = "".join(traceback.format_exception(caught))
        assert "InterpreterError" not in str(caught) and caught.__cause__ in (None, caught), repr(caught)
        assert "direct cause" not in text and text.count("DeviceWaitTimeout:") == 1, text
    cause = "InjectedFault" if ctx.get_rank() == 1 else "DeviceWaitTimeout"
    start = time.monotonic()
    with pytest.raises(iris.ContextBroken, match=f"context broken by {cause}.*at all_reduce"):
        collectives.all_reduce(ctx, x)
    with pytest.raises(iris.ContextBroken):
        ctx.barrier()
    assert time.monotonic() - start < 0.5
    assert ctx.resync()["cause"] is not None  # every rank: repaired in place (no host exchange was abandoned)
    w = ctx.get_num_ranks()
    for i in range(3):  # in step again: right results, fresh inputs, several calls in a row
        y = ctx.full((64,), float(ctx.get_rank() + i), dtype=torch.float32)
        collectives.all_reduce(ctx, y, variant="push")
        assert torch.equal(y.cpu(), torch.full((64,), float(w * (w - 1) // 2 + w * i))), y
    ctx.device_barrier()
    ctx.barrier()
    return type(caught).__name__


def r_one_sided_device_barrier(ctx):
    """Rank 0 enters one device barrier more than its peers: it times out and its context is broken (its flags and
    epochs no longer line up: "for a value >= 2 (last seen 1)" forever after); every rank calls resync(), and device
    barriers and collectives line up again."""
    ctx.device_barrier()
    if ctx.get_rank() == 0:
        with faults.wait_timeout(1.0), pytest.raises(iris.DeviceWaitTimeout):
            ctx.device_barrier()
        with pytest.raises(iris.ContextBroken, match="broken by DeviceWaitTimeout.*at device_barrier"):
            ctx.device_barrier()
    ctx.resync()
    with faults.wait_timeout(10.0):
        for _ in range(3):
            ctx.device_barrier()
        x = ctx.ones(64, dtype=torch.float32)
        collectives.all_reduce(ctx, x, variant="push")
    assert torch.equal(x.cpu(), torch.full((64,), float(ctx.get_num_ranks())))
    ctx.barrier()
    return "ok"


def r_kill_in_call(ctx):
    x = ctx.ones(64, dtype=torch.float32)
    faults.reset()
    for _ in range(3):
        faults.point(ctx, rank=1, at=2, action="kill")
        collectives.all_reduce(ctx, x, variant="push")


def r_new_context_works(ctx):
    c2 = iris.iris(HEAP)
    x = c2.ones(64, dtype=torch.float32)
    collectives.all_reduce(c2, x, variant="push")
    return x[0].item()


@pytest.mark.skipif(ON_GPU, reason="CPU backend: a GPU wait cannot see the pool's abort record and reports its "
                                   "timeout at the next barrier, so these calls do not raise where the CPU ones do")
def test_faults_break_the_context_and_later_calls_fail_at_once():
    with iris.RankPool(2, heap_size=HEAP, env={"IRIS_WAIT_TIMEOUT_S": "60"}) as pool:
        start = time.monotonic()
        with pytest.raises(iris.RankError) as info:
            pool.run(r_raise_between_calls, timeout=120)
        assert time.monotonic() - start < 20
        msg = str(info.value)
        # Root cause first: rank 1's injected fault with its traceback, then rank 0 as a consequence.
        assert info.value.rank == 1 and info.value.ranks == [1, 0], msg
        assert msg.index("InjectedFault") < msg.index("as a consequence") < msg.index("rank 0 ---"), msg
        assert "r_raise_between_calls" in msg  # the traceback
        pool.restart()  # the way back: new ranks, new contexts
        assert pool.run(r_raise_inside_call, timeout=120) == ["DeviceWaitTimeout", "InjectedFault"]
        assert pool.run(r_one_sided_device_barrier, timeout=120) == ["ok", "ok"]
        assert pool.run(r_new_context_works, timeout=120) == [2.0, 2.0]  # a new context on the same ranks
        start = time.monotonic()
        with pytest.raises(iris.RankError) as info:
            pool.run(r_kill_in_call, timeout=120)
        assert time.monotonic() - start < 25  # rank 0 gives up at once; the pool then closes
        assert info.value.rank == 1 and "exited with code 17" in str(info.value), str(info.value)


# ------------------------------------------------------------------------------------------------ messages
def r_scratch_releases_on_error(ctx):
    mark = ctx.heap.offset
    with pytest.raises(ZeroDivisionError), ctx.scratch():
        ctx.zeros(4096)
        raise ZeroDivisionError("an error passing through scratch()")
    assert ctx.heap.offset == mark
    return ctx._broken is None


def r_heap_sizes_differ(ctx):
    with pytest.raises(iris.ConsistencyError, match=r"heap_size differs across ranks \(rank 0: 1048576, rank 1: "
                                                    r"2097152"):
        iris.iris(HEAP if ctx.get_rank() == 0 else 2 * HEAP)
    with pytest.raises(TypeError, match="heap_size must be an int number of bytes"):
        iris.iris(1e6)
    return "ok"


def test_messages(ranks2):
    assert ranks2.run(r_scratch_releases_on_error) == [True, True]
    assert ranks2.run(r_heap_sizes_differ) == ["ok", "ok"]
    with pytest.raises(KeyError, match=r"unknown op 'gemm_all_reduc' \(did you mean 'gemm_all_reduce'\?\); known ops"):
        fused_ops.plan(None, "gemm_all_reduc", None, None, None)
    with pytest.raises(TypeError, match="heap_size must be an int number of bytes"):
        iris.RankPool(2, heap_size=1e6)
    with pytest.raises(ValueError, match="pass heap_size=None to run fn"):
        iris.spawn(r_scratch_releases_on_error, 2, heap_size=0)


def r_sleep(ctx):
    time.sleep(60)


CTRL_C_PARENT = """
import signal
import sys
# SIGINT handled and unblocked, as in a script started from a terminal: an ignored or blocked SIGINT is inherited, and
# something earlier in the whole suite leaves the pytest process so
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
sys.path.insert(0, {tests!r})
import iris
from test_out_of_step import r_sleep
pool = iris.RankPool(2, heap_size=None)
print(" ".join(str(p.pid) for p in pool.procs), flush=True)
try:
    pool.run(r_sleep, timeout=120)
except KeyboardInterrupt:
    print("interrupted", len(pool.procs), flush=True)
    sys.exit(0)
print("returned", flush=True)
"""


def test_ctrl_c_on_the_parent_returns_promptly():
    # A fresh Python process (as a user's script) running a pool call gets SIGINT, as a terminal's Ctrl-C sends it:
    # KeyboardInterrupt within seconds, and no rank process left behind.
    code = CTRL_C_PARENT.format(tests=os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ranks = [int(pid) for pid in proc.stdout.readline().split()]
        assert len(ranks) == 2, proc.communicate(timeout=60)
        time.sleep(1.0)  # inside pool.run now
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - start
    finally:
        proc.kill()
    assert out.split() == ["interrupted", "0"], (out, err)
    assert took < 4.0, took

    def alive(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    assert not any(alive(pid) for pid in ranks), ranks


def r_host_broadcast_sources_differ(ctx):
    """ctx.broadcast with each rank naming another source: refused on every rank before torch.distributed waits
    (which would hang until NCCL's watchdog); a source outside the group is refused on the host."""
    odd = ctx.get_rank() == 1
    # the pool's context may have broadcast from both ranks in earlier tests: first calls again (a signature every
    # rank has seen is not exchanged; IRIS_DEBUG_CHECKS=1 would check every call)
    ctx.__dict__.get("_iris_agreed", set()).difference_update({("ctx.broadcast", 0), ("ctx.broadcast", 1)})
    took = _refused_everywhere(ctx, lambda: ctx.broadcast("x", 1 if odd else 0), lambda: ctx.broadcast("x", 0))
    with pytest.raises(ValueError, match="expected a group rank in 0..1"):
        ctx.broadcast("x", 2)
    return took, ctx.broadcast([ctx.get_rank()] if ctx.get_rank() == 0 else None, 0)  # in step again


def test_host_broadcast_sources_differ_refused_on_every_rank(ranks2):
    for took, got in ranks2.run(r_host_broadcast_sources_differ):
        assert took < 5.0 and got == [0], (took, got)
