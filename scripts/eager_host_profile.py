"""Where an eager call of a catalog variant spends its host time, on two GPUs (-n ranks): for each case, the host time
per call (20 calls in a row, no synchronization in between), any host<->device synchronization inside a call
(torch.cuda.set_sync_debug_mode), and rank 0's cProfile of those calls, heaviest functions first. Launch replay on
and off (iris/replay.py), so a variant that may not be replayed (registry: Variant.capture) can be compared with
capturable ones launched the same way; `:noplan`, the copy engines' operations issued through their checked API on
every call instead of replayed from plans (iris.CopyEngine.plan).

    IRIS_BACKEND=cuda python scripts/eager_host_profile.py [op/variant[:noreplay|:noplan] ...] [--shape MxNxK]
        [--top 25] [-n 2]
"""

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fused_ops  # noqa: E402
import iris  # noqa: E402
from fused_ops import reference  # noqa: E402

DEFAULT = ["all_gather_gemm/copy_engine", "all_gather_gemm/copy_engine_phased",
           "all_gather_gemm/copy_engine_phased:noreplay", "gemm_all_reduce/copy_engine",
           "gemm_reduce_scatter/copy_engine", "gemm_reduce_scatter/copy_engine_phased",
           "gemm_reduce_scatter/fused:noreplay"]


def case(ctx, spec, shape, calls, top):
    name, _, mode = spec.partition(":")
    op, variant = name.split("/")
    m, n, k = shape
    world, rank, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    a, b = reference.make_inputs(op, 7, world, rank, m, n, k, torch.bfloat16, dev, reference=False)[:2]
    c = ctx.zeros(*reference.local_shapes(op, m, n, k, world)[2], dtype=torch.bfloat16)
    run = getattr(fused_ops, op)
    ctx.replay.enabled = mode != "noreplay"
    plan = iris.CopyEngine.plan
    if mode == "noplan":  # the copy engine's operations issued through the checked API every call
        iris.CopyEngine.plan = lambda ce, key, enqueue: enqueue()
    for _ in range(6):  # compile, workspaces, replay capture
        run(ctx, a, b, c, variant=variant)
    torch.cuda.synchronize()
    ctx.barrier()
    t0 = time.perf_counter()
    for _ in range(calls):
        run(ctx, a, b, c, variant=variant)
    host = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    ctx.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        run(ctx, a, b, c, variant=variant)
    end.record()
    end.synchronize()
    per_call = start.elapsed_time(end) * 1e3 / calls
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        run(ctx, a, b, c, variant=variant)
        torch.cuda.set_sync_debug_mode("default")
    syncs = sorted({str(w.message).splitlines()[0][:120] for w in caught
                    if "prototype feature" not in str(w.message)})  # the debug mode's own first-use notice
    torch.cuda.synchronize()
    ctx.barrier()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        run(ctx, a, b, c, variant=variant)
    prof.disable()
    torch.cuda.synchronize()
    ctx.barrier()
    ctx.replay.enabled, iris.CopyEngine.plan = True, plan
    if rank == 0:
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
        body = "\n".join(line for line in text.getvalue().splitlines() if line.strip())
        print(f"\n##### {spec} {m}x{n}x{k}: host {host:.1f} us/call, back-to-back {per_call:.1f} us/call (GPU "
              f"events), host syncs in a call: {syncs or 'none'}\n{body}", flush=True)
    return f"{spec} {m}x{n}x{k}", host, per_call, syncs


def body(ctx, cases, shapes, calls, top):
    return [case(ctx, spec, shape, calls, top) for shape in shapes for spec in cases]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases", nargs="*", default=DEFAULT)
    p.add_argument("--shape", nargs="+", default=["1024x4096x4096", "16384x8192x8192"])
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("-n", "--num_ranks", type=int, default=2)
    args = p.parse_args()
    if os.environ.get("IRIS_BACKEND") != "cuda":
        raise SystemExit("set IRIS_BACKEND=cuda: this profiles the GPU path's host time")
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shape]

    results = iris.launch.spawn(body, args.num_ranks, args.cases, shapes, args.calls, args.top, heap_size=6 << 30)
    for spec, host, per_call, syncs in results[0]:
        print(f"{spec:60s} host {host:8.1f} us  back-to-back {per_call:8.1f} us  syncs {len(syncs)}")


if __name__ == "__main__":
    main()
