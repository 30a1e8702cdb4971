"""How an eager call's one kernel gets onto the GPU, and what each way costs: host µs per call, and µs per call of
back-to-back calls, for a kernel that holds every SM for a set time, launched with and without programmatic
dependent launch (PDL). The ways:

- jit: Triton's launch path (binding, specialization, cache lookup on every call);
- run: the compiled kernel's launcher with the arguments bound once;
- relaunch: iris.relaunch.Relaunch, one ctypes cuLaunchKernelEx on arguments packed once;
- graph: a CUDA graph of the one launch, replayed per call (what launch replay did for eager calls);
- graph_ctypes: the same graph launched with cudaGraphLaunch through ctypes (torch's replay() bookkeeping skipped);
- graph10: ten launches captured in one graph, replayed (the floor: no per-call launch at all).

A graph replay cannot overlap the previous replay's tail; a direct launch with PDL can. One GPU, no peers.

With --collectives, eager calls of iris.collectives (push variants, 4 KiB to 1 MiB, -n ranks) are timed the same way
three ways in one run: prepared calls relaunched directly (whatever their size; by default only calls of
relaunch.MIN_BYTES and more are), prepared calls launching their graph (relaunch off), and the calls captured ten to a
graph (the floor).

    python benchmarks/launch_paths.py [--out DIR] [--collectives [-n RANKS]] [--plot DIR/launch_paths.csv]
"""

import argparse
import ctypes
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from benchmarks.harness import stamp  # noqa: E402
import iris  # noqa: E402
from iris import collectives as coll  # noqa: E402
from iris import device as dev  # noqa: E402
from iris._cudart import CudaRuntime  # noqa: E402
from iris import relaunch  # noqa: E402
from iris.relaunch import Relaunch  # noqa: E402


@triton.jit
def spin_kernel(out, ns, PDL: tl.constexpr):
    dev.launched_early(PDL)
    t0 = dev.now_ns()
    t = t0
    while t - t0 < ns:
        t = dev.now_ns()
    tl.store(out + tl.program_id(0), (t - t0).to(tl.int32))


def per_call(fn, calls=200, repeats=5):
    """(host µs per call, GPU µs per call) of `calls` back-to-back calls; medians of `repeats`."""
    host, gpu = [], []
    for _ in range(repeats):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        host.append((time.perf_counter() - t0) * 1e6 / calls)
        b.record()
        b.synchronize()
        gpu.append(a.elapsed_time(b) * 1e3 / calls)
    return statistics.median(host), statistics.median(gpu)


def ways(out, ns, pdl, programs):
    meta = dict(PDL=pdl, launch_pdl=pdl, num_warps=4)
    ck = spin_kernel[(programs,)](out, ns, **meta)
    bound = (out.data_ptr(), ns, pdl)
    get_stream = triton.runtime.driver.active.get_current_stream
    device = torch.cuda.current_device()

    def run():
        ck.run(programs, 1, 1, get_stream(device), ck.function, ck.packed_metadata, None, None, None, *bound)

    def captured(n):
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            g.capture_begin()
            for _ in range(n):
                spin_kernel[(programs,)](out, ns, **meta)
            g.capture_end()
        torch.cuda.synchronize()
        return g

    g1, g10 = captured(1), captured(10)
    rt = CudaRuntime().lib
    exec_handle = ctypes.c_void_p(g1.raw_cuda_graph_exec())

    def graph_ctypes():
        rt.cudaGraphLaunch(exec_handle, ctypes.c_void_p(get_stream(device)))

    relaunch, why = Relaunch.build(spin_kernel, (programs,), (out, ns), meta)
    if relaunch is None:
        print(f"no relaunch: {why}", flush=True)
    return {"jit": lambda: spin_kernel[(programs,)](out, ns, **meta), "run": run, "relaunch": relaunch,
            "graph": g1.replay, "graph_ctypes": graph_ctypes, "graph10": g10.replay}


def collective_calls(ctx, nbytes):
    """(collective, fn) of the push variants on `nbytes` bf16 per rank's tensor (all_gather: its output)."""
    w, dtype = ctx.get_num_ranks(), torch.bfloat16
    n = nbytes // 2
    x, y = ctx.randn(n, dtype=dtype), ctx.zeros(n, dtype=dtype)
    xs, ys = ctx.randn(n // w, dtype=dtype), ctx.zeros(n // w, dtype=dtype)
    return [("all_reduce", lambda: coll.all_reduce(ctx, x, variant="push", out=y)),
            ("all_gather", lambda: coll.all_gather(ctx, y, xs, variant="push")),
            ("reduce_scatter", lambda: coll.reduce_scatter(ctx, ys, x, variant="push"))]


def bench_collectives(ctx, sizes, st):
    from benchmarks.harness import graph_us

    rows = []
    for nbytes in sizes:
        with ctx.scratch():
            for name, fn in collective_calls(ctx, nbytes):
                times = {}
                for way, on in (("relaunch", True), ("graph_replay", False)):
                    ctx.replay.clear()
                    ctx.replay.relaunch = on
                    relaunch.MIN_BYTES = 0  # every size, whatever the default threshold
                    for _ in range(10):
                        fn()
                    ctx.barrier()
                    times[way] = per_call(fn)
                    ctx.barrier()
                ctx.replay.relaunch = True
                times["graph10"] = (float("nan"), graph_us(fn, ctx.barrier))
                ctx.barrier()
                t = torch.tensor([v for hg in times.values() for v in hg], device=ctx.get_device(),
                                 dtype=torch.float64)
                torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
                vals = t.tolist()
                for i, way in enumerate(times):
                    rows.append(dict(collective=name, bytes=nbytes, way=way, host_us=vals[2 * i],
                                     per_call_us=vals[2 * i + 1], world_size=ctx.get_num_ranks(), **st))
                if ctx.get_rank() == 0:
                    print(f"{name:14s} {nbytes:>8d} B  " + "  ".join(
                        f"{way} {vals[2 * i + 1]:5.2f} us (host {vals[2 * i]:5.2f})" for i, way in enumerate(times)),
                        flush=True)
    return rows


def run_collectives(ctx, args, st):
    rows = bench_collectives(ctx, [1 << s for s in range(12, 21, 2)], st)
    if ctx.get_rank() == 0 and args.out:
        import pandas as pd

        os.makedirs(args.out, exist_ok=True)
        pd.DataFrame(rows).to_csv(os.path.join(args.out, f"launch_paths_collectives_w{ctx.get_num_ranks()}.csv"),
                                  index=False)


def plot(df, path):
    """µs per call of back-to-back calls against the kernel's own time, one line per way, PDL off and on; the
    dotted line is the kernel time itself."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, pdl in zip(axes, (False, True)):
        d = df[df.pdl == pdl]
        for way, g in d.groupby("way", sort=False):
            g = g.sort_values("kernel_ns")
            ax.plot(g.kernel_ns / 1e3, g.per_call_us, marker="o", ms=3, label=f"{way} (host {g.host_us.median():.1f}"
                    f" us/call)")
        ax.plot(d.kernel_ns / 1e3, d.kernel_ns / 1e3, ":", color="k", lw=0.8, label="the kernel alone")
        ax.set(title=f"PDL {'on' if pdl else 'off'}", xlabel="kernel time (us, every SM)", ylabel="us per call")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    r = df.iloc[0]
    fig.suptitle(f"One kernel per eager call, back to back: {r.device}, {r.date} ({r.commit})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None)
    p.add_argument("--ns", type=int, nargs="+", default=[0, 2000, 4000, 6000, 8000])
    p.add_argument("--collectives", action="store_true")
    p.add_argument("-n", "--num_ranks", type=int, default=1)
    p.add_argument("--plot", metavar="CSV", help="only redraw launch_paths.png next to this launch_paths.csv")
    args = p.parse_args()
    if args.plot:
        import pandas as pd

        plot(pd.read_csv(args.plot), os.path.join(os.path.dirname(args.plot), "launch_paths.png"))
        return
    if args.collectives:
        st = stamp(args.num_ranks, "benchmarks/launch_paths.py")
        iris.spawn(run_collectives, args.num_ranks, args, st, heap_size=1 << 30)
        return
    programs = torch.cuda.get_device_properties(0).multi_processor_count
    out = torch.zeros(programs, dtype=torch.int32, device="cuda")
    rows, st = [], stamp(1, "benchmarks/launch_paths.py")
    for pdl in (False, True):
        for ns in args.ns:
            fns = ways(out, ns, pdl, programs)
            for name, fn in fns.items():
                if fn is None:
                    continue
                for _ in range(20):
                    fn()
                host, gpu = per_call(fn, calls=20 if name == "graph10" else 200)
                if name == "graph10":
                    host, gpu = host / 10, gpu / 10
                rows.append(dict(way=name, pdl=pdl, kernel_ns=ns, host_us=host, per_call_us=gpu, **st))
                print(f"pdl={int(pdl)} kernel {ns / 1e3:4.1f} us  {name:13s} host {host:6.2f} us/call   "
                      f"back-to-back {gpu:6.2f} us/call", flush=True)
    if args.out:
        import pandas as pd

        os.makedirs(args.out, exist_ok=True)
        df = pd.DataFrame(rows)
        df.to_csv(os.path.join(args.out, "launch_paths.csv"), index=False)
        plot(df, os.path.join(args.out, "launch_paths.png"))


if __name__ == "__main__":
    main()
