"""Host (Python) time per eager collective call, with the kernel launch itself stubbed out: what a call costs
before it reaches the GPU, with and without prepared front-door calls (iris/collectives/, iris/replay.py).
Runs one rank; prints microseconds per call. With IRIS_BACKEND=cuda it also times, on the GPU, a real eager call
and its parts (a bare CUDAGraph.replay(), the capture check).

    python benchmarks/host_overhead.py [--calls 2000]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("IRIS_BACKEND", "cpu")
import iris  # noqa: E402
import torch  # noqa: E402

from iris import collectives as coll  # noqa: E402
from iris.replay import ReplayCache  # noqa: E402


class _NoLaunch:
    """A 'graph' whose replay launches nothing: only the host path is timed."""

    def __init__(self, launch):
        pass

    def replay(self):
        pass


def _per_call(fn, calls):
    for _ in range(100):
        fn()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def run(ctx, calls):
    x = ctx.zeros(2048, dtype=torch.float16)
    y = ctx.zeros(2048 * ctx.get_num_ranks(), dtype=torch.float16)
    cases = {"all_reduce push": lambda: coll.all_reduce(ctx, x, variant="push"),
             "all_gather push": lambda: coll.all_gather(ctx, y, x, variant="push")}
    for fn in cases.values():  # compile and create workspaces with real launches first
        fn()
    out = {}
    for prepared in (False, True):
        ctx.replay = ReplayCache(True, capture=_NoLaunch, capturing=lambda: False)
        if not prepared:
            ctx.replay.prepared = lambda sig: None
        for name, fn in cases.items():
            out[(name, prepared)] = _per_call(fn, calls)
    return out


def run_cuda(ctx, calls):
    """On a GPU: host time of a real eager call (prepared, replayed) against its parts: a bare CUDAGraph.replay() of
    a one-kernel graph, and the capture check every replay makes. (With one rank the all-reduce has no peer to wait
    for; the host path is the same.)"""
    x = ctx.zeros(2048, dtype=torch.float16)
    y = torch.zeros(2048, dtype=torch.float16, device=ctx.get_device())
    graph = torch.cuda.CUDAGraph()
    y.add_(1)
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        y.add_(1)
    cases = {"all_reduce push (eager, replayed)": lambda: coll.all_reduce(ctx, x, variant="push"),
             "CUDAGraph.replay() alone": graph.replay,
             "is_current_stream_capturing()": torch.cuda.is_current_stream_capturing}
    out = {}
    for name, fn in cases.items():
        out[name] = _per_call(fn, calls)
        torch.cuda.synchronize()
    return out


def run_auto_cuda(ctx, calls):
    """On a GPU, world 1 (no tuned rows: `auto` runs torch_nccl): wall time per call of a fused op called back to back
    as `auto` and as `torch_nccl`, alternating blocks of calls so that drift hits both. What `auto` adds on the path
    where it runs a baseline (the eager sweeps' worst `auto` rows are such rows)."""
    import fused_ops
    from fused_ops import reference
    n = k = 4096
    out = {}
    for op in ("gemm_all_scatter", "gemm_all_reduce", "all_gather_gemm", "gemm_reduce_scatter"):
        a, b, _ = reference.make_inputs(op, 0, 1, 0, 128, n, k, torch.bfloat16, ctx.get_device(), reference=False)
        c = ctx.zeros(*reference.local_shapes(op, 128, n, k, 1)[2], dtype=torch.bfloat16)
        fn = getattr(fused_ops, op)
        times = {"torch_nccl": [], "auto": []}
        for block in range(10):
            for variant in (("torch_nccl", "auto") if block % 2 else ("auto", "torch_nccl")):
                for _ in range(20):
                    fn(ctx, a, b, c, variant=variant)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(max(1, calls // 20)):
                    fn(ctx, a, b, c, variant=variant)
                torch.cuda.synchronize()
                times[variant].append((time.perf_counter() - t0) / max(1, calls // 20) * 1e6)
        for variant, ts in times.items():
            out[f"{op} 128x{n}x{k} {variant}"] = sorted(ts)[len(ts) // 2]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=2000)
    args = p.parse_args()
    res = iris.spawn(run, 1, args.calls, heap_size=1 << 26)[0]
    for (name, prepared), us in res.items():
        print(f"{name:16s} prepared calls {'on ' if prepared else 'off'}: {us:5.1f} us of host time per call")
    if iris.BACKEND == "cuda":
        for name, us in iris.spawn(run_cuda, 1, args.calls, heap_size=1 << 26)[0].items():
            print(f"{name:34s}: {us:5.1f} us of host time per call")
        for name, us in iris.spawn(run_auto_cuda, 1, args.calls, heap_size=1 << 28)[0].items():
            print(f"{name:44s}: {us:6.1f} us per call, back to back (median of 10 blocks)")


if __name__ == "__main__":
    main()
