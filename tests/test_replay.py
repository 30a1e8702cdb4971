"""Eager calls replayed from captured graphs (iris/replay.py): the cache's rules with a stand-in for CUDA capture,
and, through real ranks, repeated collective and catalog calls on the same buffers with fresh values every call
(replays and prepared calls: one that read stale arguments or skipped a launch would fail the check). On the CPU
backend the stand-in capture records the launch and a replay runs it, so the same front-door paths run."""

import pytest
import torch
from conftest import ON_GPU

import fused_ops
from fused_ops import reference
from iris import collectives as coll
from iris.replay import ReplayCache, tensor_key


class FakeGraph:
    """Capture records the launch without running it; replay runs it, as a CUDA graph does."""

    def __init__(self, launch):
        self.launch, self.replays = launch, 0

    def replay(self):
        self.replays += 1
        self.launch()


def test_cache_runs_every_call_exactly_once_and_captures_on_the_second_sighting():
    ran = []
    cache = ReplayCache(True, capacity=2, capture=FakeGraph, capturing=lambda: False)
    for _ in range(4):
        cache("a", lambda: ran.append("a"))
    assert ran == ["a"] * 4 and cache.captures == 1 and cache.graphs["a"].replays == 3
    cache(None, lambda: ran.append("none"))  # no key: never cached
    cache(None, lambda: ran.append("none"))
    assert ran[-2:] == ["none", "none"] and cache.captures == 1


def test_cache_evicts_the_least_recent_graph_and_forgets_on_clear():
    cache = ReplayCache(True, capacity=2, capture=FakeGraph, capturing=lambda: False)
    for key in ("a", "a", "b", "b", "a", "c", "c"):  # capture a, b; touch a; capture c evicts b
        cache(key, lambda: None)
    assert list(cache.graphs) == ["a", "c"] and cache.captures == 3
    assert sorted(cache._launchers) == ["a", "c"]  # an evicted graph's launcher goes with it
    cache.clear()
    assert not cache.graphs and not cache.seen and not cache._launchers
    cache("a", lambda: None)
    assert cache.captures == 3  # seen once again, not captured


def test_a_failed_capture_raises_clearly_and_turns_replay_off():
    ran = []

    def bad_capture(launch):
        raise RuntimeError("operation not permitted when stream is capturing")

    cache = ReplayCache(True, capacity=4, capture=bad_capture, capturing=lambda: False)
    cache("k", lambda: ran.append(1))
    with pytest.raises(RuntimeError, match="replay is now off in this process.*IRIS_REPLAY=0"):
        cache("k", lambda: ran.append(1))
    cache("k", lambda: ran.append(1))  # off: plain launches from now on
    assert ran == [1, 1] and not cache.enabled and not cache.graphs


def test_disabled_cache_only_launches():
    ran = []
    cache = ReplayCache(False, capture=FakeGraph, capturing=lambda: False)
    for _ in range(3):
        cache("k", lambda: ran.append(1))
    assert ran == [1, 1, 1] and not cache.graphs and not cache.seen


def test_under_an_outer_capture_calls_launch_and_remember_nothing():
    ran, outer = [], [False]
    cache = ReplayCache(True, capacity=4, capture=FakeGraph, capturing=lambda: outer[0])
    cache("k", lambda: ran.append("eager"))  # seen once
    outer[0] = True
    for _ in range(3):  # a user's capture records the launches themselves; a replay here would be illegal
        cache("k", lambda: ran.append("captured"))
    assert ran == ["eager"] + ["captured"] * 3 and cache.captures == 0 and not cache.graphs
    outer[0] = False
    cache("k", lambda: ran.append("second sighting"))
    assert cache.captures == 1 and ran[-1] == "second sighting"


def test_real_cache_defers_to_torch_for_the_capture_state():
    assert ReplayCache(True)._capturing is torch.cuda.is_current_stream_capturing


def test_tensor_key_names_address_shape_strides_dtype():
    x = torch.zeros(4, 6)
    assert tensor_key(x) == (x.data_ptr(), (4, 6), (6, 1), torch.float32)
    assert tensor_key(x.t()) != tensor_key(x) and tensor_key(None) is None


# ---------------------------------------------------------------------------------------------- through ranks
def r_repeated_calls(ctx, calls):
    """The same buffers, new values each call; every result checked. Returns (worst errors, captures)."""
    w, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    dtype = torch.float32
    x, y = ctx.zeros(3000, dtype=dtype), ctx.zeros(3000, dtype=dtype)
    g_in, g_out = ctx.zeros(700, dtype=dtype), ctx.zeros(700 * w, dtype=dtype)
    op = "gemm_all_reduce"
    m, n, k = 48, 40, 32 * w
    a_full = torch.empty(m, k // w, dtype=dtype, device=dev)
    b_full = torch.empty(k // w, n, dtype=dtype, device=dev)
    c = ctx.zeros(m, n, dtype=dtype)
    saved = ctx.replay
    if not ON_GPU:  # the CPU backend has no CUDA graphs: a stand-in capture runs the same front-door paths
        ctx.replay = ReplayCache(True, capture=FakeGraph, capturing=lambda: False)
    captures0 = ctx.replay.captures
    worst = dict(push=0.0, one_shot=0.0, all_gather=0.0, gemm=0.0, copy_engine=0.0)
    shared_gpu = ctx.ranks_per_device > 1  # copy_engine refuses ranks that share a GPU (tests/test_fused_ops.py)
    for call in range(calls):
        g = torch.Generator().manual_seed(1000 + call)
        every = torch.randn(w, 3000, generator=g, dtype=torch.float64)
        for variant in ("push", "one_shot"):
            x.copy_(every[rank].to(dtype))
            y.fill_(float("nan"))
            coll.all_reduce(ctx, x, variant=variant, out=y)
            worst[variant] = max(worst[variant], float((y.double().cpu() - every.sum(0)).abs().max()))
        shards = torch.randn(w, 700, generator=g, dtype=torch.float64)
        g_in.copy_(shards[rank].to(dtype))
        g_out.fill_(float("nan"))
        coll.all_gather(ctx, g_out, g_in)
        worst["all_gather"] = max(worst["all_gather"], float((g_out.cpu() - shards.reshape(-1).to(dtype)).abs().max()))
        a, b, ref = reference.make_inputs(op, 50 + call, w, rank, m, n, k, dtype, dev)
        a_full.copy_(a)
        b_full.copy_(b)
        c.fill_(float("nan"))
        fused_ops.gemm_all_reduce(ctx, a_full, b_full, c, variant="one_shot")
        worst["gemm"] = max(worst["gemm"], reference.rel_error(c, ref))
        if not shared_gpu:  # a variant a graph may not capture (registry: Variant.capture): launched, not replayed
            c.fill_(float("nan"))
            fused_ops.gemm_all_reduce(ctx, a_full, b_full, c, variant="copy_engine")
            worst["copy_engine"] = max(worst["copy_engine"], reference.rel_error(c, ref))
        ctx.barrier()
    out = worst, ctx.replay.captures - captures0, len(ctx.replay._prepared)
    ctx.replay = saved
    return out


def test_repeated_calls_on_the_same_buffers_see_fresh_values(ranks):
    for worst, captures, prepared in ranks.run(r_repeated_calls, 5):
        assert worst["push"] < 1e-4 and worst["one_shot"] < 1e-4 and worst["all_gather"] == 0, worst
        assert max(worst["gemm"], worst["copy_engine"]) < reference.TOLERANCE[torch.float32], worst  # TF32 on GPUs
        # each of the four call sites is captured once (second call) and replayed after, copy_engine's never; the
        # three collective calls and the catalog call skip their checks from the third call on (prepared calls)
        assert captures == 4 and prepared == 4, (captures, prepared)


def r_prepared_catalog_calls(ctx):
    """Catalog calls on the same operands with fresh values: how many ran in full (checks, auto's pick, set-up),
    and the worst error, through the phases a prepared call must respect."""
    import iris
    from fused_ops import ops

    w, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    outer, full, worst = [False], [], [0.0]
    saved, variant = ctx.replay, ops._variant
    ctx.replay = ReplayCache(True, capture=FakeGraph, capturing=lambda: outer[0])
    ops._variant = lambda *a, **k: full.append(1) or variant(*a, **k)
    m, n, k = 32, 48, 32 * w
    a_full = torch.empty(m, k // w, device=dev)
    b_full = torch.empty(k // w, n, device=dev)
    c = ctx.zeros(m, n)
    counts = {}
    if fused_ops.auto.choose(ctx, "gemm_all_reduce", m, n, k, torch.float32) == "torch_nccl":
        # one GPU per rank and no table row for this GPU: auto would run the baseline, which has no prepared calls;
        # a tune of two fused variants makes auto pick one of them (before the counting starts)
        ops._variant = variant
        a_full.normal_()
        b_full.normal_()
        fused_ops.tune(ctx, "gemm_all_reduce", a_full, b_full, c, variants=["one_shot", "atomic"], iters=1)
        ops._variant = lambda *a, **k: full.append(1) or variant(*a, **k)

    def call(seed):
        a, b, ref = reference.make_inputs("gemm_all_reduce", seed, w, rank, m, n, k, torch.float32, dev)
        a_full.copy_(a)
        b_full.copy_(b)
        c.fill_(float("nan"))
        fused_ops.gemm_all_reduce(ctx, a_full, b_full, c, variant="auto")
        worst[0] = max(worst[0], reference.rel_error(c, ref))

    try:
        for seed in range(5):
            call(seed)
        counts["eager"] = len(full)
        with iris.Tracer(ctx, capacity=64):
            call(10)
        counts["traced"] = len(full)
        outer[0] = True  # a user's capture: the call runs in full (auto picks for graphs there)
        call(11)
        outer[0] = False
        counts["captured"] = len(full)
        call(12)
        counts["after"] = len(full)
        if ctx.ranks_per_device > 1:  # tune's timing reduction runs on NCCL, which refuses ranks sharing a GPU
            ctx.replay.forget_prepared()
        else:
            fused_ops.tune(ctx, "gemm_all_reduce", a_full, b_full, c, variants=["one_shot", "atomic"], iters=1)
        full.clear()
        for seed in range(20, 24):
            call(seed)
        counts["after_tune"] = len(full)
    finally:
        ctx.replay, ops._variant = saved, variant
    return counts, worst[0]


def test_prepared_catalog_calls_skip_the_checks_but_not_tracing_capture_or_tuning(ranks):
    for counts, worst in ranks.run(r_prepared_catalog_calls):
        assert worst < reference.TOLERANCE[torch.float32], worst
        # in full: the first two calls and the prepared call's first run; the fourth and fifth launch the graph
        assert counts["eager"] == 3, counts
        # traced and captured calls run in full; the next eager call is prepared again
        assert counts["traced"] == 4 and counts["captured"] == 5 and counts["after"] == 5, counts
        # tune() forgets prepared calls: auto picks again (two offers, then the prepared call's first run)
        assert counts["after_tune"] == 3, counts


def test_prepared_calls_are_kept_from_the_second_offer_and_dropped_on_clear():
    cache = ReplayCache(True, capacity=2, capture=FakeGraph, capturing=lambda: False)
    cache.prepare("s", lambda: "first")
    assert cache.prepared("s") is None  # offered once: nothing held
    cache.prepare("s", lambda: "second")
    assert cache.prepared("s")() == "second"
    for sig in ("t", "t", "u", "u"):  # capacity 2: the oldest prepared call goes
        cache.prepare(sig, lambda sig=sig: sig)
    assert cache.prepared("s") is None and cache.prepared("u")() == "u"
    cache.clear()
    assert cache.prepared("u") is None
    off = ReplayCache(False)
    off.prepare("s", lambda: 1)
    off.prepare("s", lambda: 1)
    assert off.prepared("s") is None


def test_a_prepared_call_becomes_a_bare_replay_of_its_graph():
    ran, checked, outer = [], [], [False]
    cache = ReplayCache(True, capacity=4, capture=FakeGraph, capturing=lambda: outer[0])

    def front_door():  # as iris.collectives does: a prepared call, else the checks, then launches through the cache
        call = cache.prepared("sig")
        if call is not None:
            return call()
        checked.append(1)
        launch = lambda: cache("key", lambda: ran.append(1))  # noqa: E731
        cache.prepare("sig", lambda: launch() or "out", key="key", result="out")
        return launch() or "out"

    assert [front_door() for _ in range(5)] == ["out"] * 5
    # checks on the first two calls only; one capture (second call); replays from then on, the last two bare
    assert len(ran) == 5 and len(checked) == 2 and cache.captures == 1 and cache.graphs["key"].replays == 4
    replayer = cache.prepared("sig")
    assert replayer.graph is cache.graphs["key"]
    cache.graphs.clear()  # dropped by the LRU: the prepared call keeps (and still replays) its graph
    assert front_door() == "out" and len(ran) == 6 and replayer.graph.replays == 5
    outer[0] = True  # under a user's capture the launch itself runs (it joins that capture); no replay
    assert front_door() == "out" and len(ran) == 7 and replayer.graph.replays == 5
    outer[0] = False
    cache.clear()
    assert cache.prepared("sig") is None


def test_a_prepared_one_kernel_call_is_relaunched_directly_and_falls_back_to_its_graph(monkeypatch):
    from iris import relaunch

    ran, relaunched, built = [], [], []

    def build(kernel, grid, args, meta):
        built.append((kernel, grid, args, meta))
        return ((lambda: relaunched.append(1)), "") if kernel == "plain" else (None, "not plain")

    monkeypatch.setattr(relaunch.Relaunch, "build", staticmethod(build))

    def front_door(cache, kernel):
        call = cache.prepared("sig")
        if call is not None:
            return call()
        launch = lambda: cache("key", lambda: ran.append(1))  # noqa: E731
        cache.prepare("sig", lambda: launch() or "out", key="key", result="out", direct=(kernel, (3,), (1, 2), {}))
        return launch() or "out"

    cache = ReplayCache(True, capacity=4, capture=FakeGraph, capturing=lambda: False)
    assert [front_door(cache, "plain") for _ in range(5)] == ["out"] * 5
    # the first two calls launch (and capture) as before; from the third, the kernel is relaunched: no replay
    assert len(ran) == 2 and relaunched == [1, 1, 1] and built == [("plain", (3,), (1, 2), {})]
    assert cache.graphs["key"].replays == 1  # the second call's
    for kernel, enabled in (("odd", True), ("plain", False)):  # no Relaunch for it, or relaunch off: graph replays
        cache, ran[:], relaunched[:], built[:] = ReplayCache(True, 4, FakeGraph, lambda: False), [], [], []
        cache.relaunch = enabled
        assert [front_door(cache, kernel) for _ in range(5)] == ["out"] * 5
        assert len(ran) == 5 and relaunched == [] and cache.graphs["key"].replays == 4
        assert len(built) == (1 if enabled else 0)  # asked once, not on every call


def _fake_compiled(signature, **md):
    import collections

    fields = dict(num_warps=4, shared=1024, launch_pdl=True, num_ctas=1, global_scratch_size=0, profile_scratch_size=0)
    fields.update(md)
    meta = collections.namedtuple("Meta", sorted(fields))(**fields)
    return type("Compiled", (), dict(metadata=meta, src=type("Src", (), dict(signature=signature))(), function=0x1234,
                                     name="k"))()


def test_relaunch_packs_pointers_and_scalars_in_kernel_order_and_fills_the_launch_config():
    import ctypes

    from iris import relaunch

    x = torch.arange(4, dtype=torch.float32)
    sig = dict(X="*fp32", n="i32", big="i64", one="constexpr", scale="fp32", flags="*i32", KIND="constexpr")
    compiled = _fake_compiled(sig, num_warps=8, shared=4096)
    values = relaunch.pack(compiled, dict(X=x, n=7, big=1 << 40, one=1, scale=0.5, flags=0xABC0, KIND="ar"))
    got = [v.value for v in values]
    assert got == [x.data_ptr(), 7, 1 << 40, 0.5, 0xABC0, 0, 0]  # constexprs take no slot; two null scratch slots
    calls = []

    def launch(config, function, params, extra):
        cfg = ctypes.cast(config, ctypes.POINTER(relaunch._Config)).contents
        ptrs = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        kinds = [ctypes.c_uint64, ctypes.c_int32, ctypes.c_int64, ctypes.c_float, ctypes.c_uint64]
        args = [ctypes.cast(ptrs[i], ctypes.POINTER(k)).contents.value for i, k in enumerate(kinds)]
        calls.append(((cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ), cfg.blockDimX, cfg.sharedMemBytes, cfg.hStream,
                      cfg.numAttrs, cfg.attrs[0].id, cfg.attrs[0].value.i, function.value, args, extra))
        return 0

    r = relaunch.Relaunch(compiled, (5,), values, (x,), 0, launch=launch, stream=lambda device: 0x77)
    r()
    r()
    assert calls == [((5, 1, 1), 256, 4096, 0x77, 1, relaunch._PROGRAMMATIC_STREAM_SERIALIZATION, 1, 0x1234,
                      [x.data_ptr(), 7, 1 << 40, 0.5, 0xABC0], None)] * 2
    no_pdl = relaunch.Relaunch(_fake_compiled(sig, launch_pdl=False), (2, 3), values, (), 0, launch=launch,
                               stream=lambda device: 0)
    no_pdl()
    assert calls[-1][0] == (2, 3, 1) and calls[-1][4] == 0
    failing = relaunch.Relaunch(compiled, (1,), values, (), 0, launch=lambda *a: 1, stream=lambda device: 0)
    with pytest.raises(RuntimeError, match="cuLaunchKernelEx failed with CUDA driver error 1; IRIS_RELAUNCH=0"):
        failing()


@pytest.mark.parametrize("sig,md", [(dict(x="bf16"), {}), (dict(x="*fp32"), dict(global_scratch_size=64)),
                                    (dict(x="*fp32"), dict(profile_scratch_size=8)),
                                    (dict(x="tensordesc<bf16[64, 64]>"), {})])
def test_relaunch_refuses_kernels_it_cannot_pack(sig, md):
    from iris import relaunch

    assert relaunch.pack(_fake_compiled(sig, **md), dict(x=torch.zeros(1))) is None


def test_relaunch_build_binds_arguments_by_name_and_steps_aside_for_launch_hooks(monkeypatch):
    import triton

    from iris import relaunch

    compiled = _fake_compiled(dict(X="*fp32", n="i32", BLOCK="constexpr"))
    compiled.run = None  # a loaded module
    warmups = []

    class Kernel(triton.runtime.JITFunction):
        arg_names = ["X", "n", "BLOCK"]

        def __init__(self):  # a stand-in: no function to compile
            pass

        def warmup(self, *args, grid, **meta):
            warmups.append((args, grid, meta))
            return compiled

    launches = []
    monkeypatch.setattr(relaunch, "_launch_fn", lambda: lambda *a: launches.append(a) or 0)
    monkeypatch.setattr(relaunch, "_current_device", lambda: 0)
    monkeypatch.setattr(relaunch, "_current_stream", lambda: lambda device: 0x55)
    x = torch.zeros(3)
    r, why = relaunch.Relaunch.build(Kernel(), (4,), (x, 9), dict(BLOCK=64, num_warps=4, launch_pdl=True))
    assert why == "" and [v.value for v in r.values] == [x.data_ptr(), 9, 0, 0] and r.keep == (x, 9)
    assert warmups == [((x, 9), (4,), dict(BLOCK=64, num_warps=4, launch_pdl=True))]
    r()
    assert len(launches) == 1 and launches[0][0]._obj.hStream == 0x55
    hooks = triton.knobs.runtime
    saved = hooks.launch_enter_hook
    try:
        hooks.launch_enter_hook = None
        assert relaunch.Relaunch.build(Kernel(), (4,), (x, 9), dict(BLOCK=64))[1] == ""
        hooks.launch_enter_hook = lambda *a: None  # a profiler's hook: Triton's launch path, which calls it
        assert relaunch.Relaunch.build(Kernel(), (4,), (x, 9), dict(BLOCK=64)) == (None, "Triton launch hooks are set")
        chain = type(saved)() if hasattr(saved, "calls") else None  # Triton >= 3.5: an empty chain is no hook
        if chain is not None:
            hooks.launch_enter_hook = chain
            assert relaunch.Relaunch.build(Kernel(), (4,), (x, 9), dict(BLOCK=64))[1] == ""
            chain.add(lambda *a: None)
            assert relaunch.Relaunch.build(Kernel(), (4,), (x, 9), dict(BLOCK=64))[0] is None
    finally:
        hooks.launch_enter_hook = saved
    interpreted = relaunch.Relaunch.build(object(), (4,), (x, 9), {})
    assert interpreted[0] is None and "not a compiled Triton kernel" in interpreted[1]
    monkeypatch.setattr(relaunch, "ENABLED", False)
    assert relaunch.Relaunch.build(Kernel(), (4,), (x, 9), dict(BLOCK=64)) == (None, "IRIS_RELAUNCH=0")


def test_collectives_relaunch_only_calls_of_relaunch_min_bytes_and_more(monkeypatch):
    from iris import collectives, relaunch

    small, large = torch.zeros(1000), torch.zeros(1 << 18)  # 4 KB and 1 MiB of float32
    assert collectives._direct("k", (1,), (small,), {}, small, small) is None
    assert collectives._direct("k", (1,), (small,), {}, small, large) == ("k", (1,), (small,), {})
    monkeypatch.setattr(relaunch, "MIN_BYTES", 0)
    assert collectives._direct("k", (1,), (small,), {}, small, small) is not None


def r_relaunched_collectives(ctx, calls):
    """Collectives whose prepared calls relaunch their kernel (MIN_BYTES lowered so small calls qualify): eager calls
    with fresh values every call, then the same calls captured into a user's CUDA graph and replayed. Returns the
    worst error per collective and whether each prepared call was a relaunch."""
    from iris import relaunch

    w, rank = ctx.get_num_ranks(), ctx.get_rank()
    saved = relaunch.MIN_BYTES
    relaunch.MIN_BYTES = 0
    ctx.replay.clear()
    n = 3000
    x, y = ctx.zeros(n), ctx.zeros(n)
    shard, gathered = ctx.zeros(n // w), ctx.zeros(n // w * w)
    ops = {"all_reduce/push": lambda: coll.all_reduce(ctx, x, variant="push", out=y),
           "all_reduce/one_shot": lambda: coll.all_reduce(ctx, x, variant="one_shot", out=y),
           "all_gather/push": lambda: coll.all_gather(ctx, gathered, shard, variant="push"),
           "reduce_scatter/push": lambda: coll.reduce_scatter(ctx, shard, x, variant="push")}
    worst, relaunched = {}, {}

    def fresh(seed):
        every = torch.randn(w, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        x.copy_(every[rank].float())
        shard.copy_(every[rank, :n // w].float())
        y.fill_(float("nan"))
        gathered.fill_(float("nan"))
        return every

    def check(name, every):
        want = {"all_gather/push": lambda: every[:, :n // w].reshape(-1),
                "reduce_scatter/push": lambda: every.sum(0)[rank * (n // w):(rank + 1) * (n // w)]}.get(
                    name, lambda: every.sum(0))()
        got = {"all_gather/push": gathered, "reduce_scatter/push": shard}.get(name, y)
        worst[name] = max(worst.get(name, 0.0), float((got.double().cpu() - want).abs().max()))

    try:
        for name, op in ops.items():
            for call in range(calls):
                every = fresh(100 * call + len(name))
                ctx.barrier()  # every rank's inputs are written before any peer reads them
                op()
                torch.cuda.synchronize()
                ctx.barrier()
                check(name, every)
            prepared = next(p for s, p in ctx.replay._prepared.items() if s[0] == name.split("/")[0] and
                            name.split("/")[1] in s)
            relaunched[name] = prepared.relaunch is not None
            every = fresh(5000 + len(name))  # back to back, no host sync: each launch overlaps the last (PDL)
            ctx.barrier()
            for _ in range(calls):
                op()
            torch.cuda.synchronize()
            ctx.barrier()
            check(name, every)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                op()
            for replay in range(3):
                every = fresh(7000 + replay)
                torch.cuda.synchronize()
                ctx.barrier()
                graph.replay()
                torch.cuda.synchronize()
                ctx.barrier()
                check(name, every)
            del graph
    finally:
        relaunch.MIN_BYTES = saved
        ctx.replay.clear()
    return worst, relaunched


@pytest.mark.skipif(not ON_GPU, reason="relaunching needs compiled kernels: GPUs only (the CPU backend interprets)")
def test_relaunched_collectives_are_fresh_calls_eager_and_inside_a_users_graph(ranks):
    for worst, relaunched in ranks.run(r_relaunched_collectives, 6):
        assert all(relaunched.values()), relaunched
        assert max(worst.values()) < 1e-4, worst


def test_prepared_calls_can_be_turned_off(monkeypatch):
    from iris import replay

    monkeypatch.setattr(replay, "PREPARED", False)
    cache = ReplayCache(True, capacity=4, capture=FakeGraph, capturing=lambda: False)
    for _ in range(3):
        cache.prepare("sig", lambda: "call", key="key", result="out")
    assert cache.prepared("sig") is None
