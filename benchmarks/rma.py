"""RMA microbenchmark between rank 0 and rank 1: load / store / get / put bandwidth from 4 KiB to 1 GiB, with the
copy-engine P2P bandwidth measured in the same run as the baseline, remote atomic throughput, and cross-GPU flag
ping-pong latency. Writes results/rma.csv (+ rma.png).

    python benchmarks/rma.py [--max-bytes 1073741824] [--out results]
"""

import argparse
import datetime
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from benchmarks.harness import timed  # noqa: E402
from iris.heap import _DevicePointer  # noqa: E402


@triton.jit
def rma_bw_kernel(src, dst, n, cur, peer, heap_bases, OP: tl.constexpr, BLOCK: tl.constexpr):
    pid, nprog = tl.program_id(0), tl.num_programs(0)
    for start in range(pid * BLOCK, n, nprog * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        if OP == "put":
            iris.put(src + offs, dst + offs, cur, peer, heap_bases, mask=m)
        elif OP == "get":
            iris.get(src + offs, dst + offs, cur, peer, heap_bases, mask=m)
        elif OP == "store":
            iris.store(dst + offs, tl.load(src + offs, mask=m), cur, peer, heap_bases, mask=m)
        else:  # load
            tl.store(dst + offs, iris.load(src + offs, cur, peer, heap_bases, mask=m), mask=m)


@triton.jit
def atomic_bw_kernel(counters, n, cur, peer, heap_bases, BLOCK: tl.constexpr):
    pid, nprog = tl.program_id(0), tl.num_programs(0)
    for start in range(pid * BLOCK, n, nprog * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        iris.atomic_add(counters + offs, tl.full((BLOCK,), 1, tl.int32), cur, peer, heap_bases, mask=offs < n,
                        sem="relaxed", scope="sys")


@triton.jit(do_not_specialize=["iters"])  # warm-up and timed call must share one compiled kernel
def pingpong_kernel(flags, iters, cur, heap_bases):
    peer = 1 - cur
    for i in range(1, iters + 1):
        if cur == 0:
            iris.signal(flags, i, cur, peer, heap_bases)
            iris.wait(flags + 1, i, cur, heap_bases, cmp="ge")
        else:
            iris.wait(flags, i, cur, heap_bases, cmp="ge")
            iris.signal(flags + 1, i, cur, peer, heap_bases)


def time_us(fn, reps):
    """Median over 5 batches of (CUDA-event time of `reps` back-to-back calls) / reps, after one warm-up call."""
    fn()
    torch.cuda.synchronize()
    return timed(fn, calls=reps, repeats=5)


def reps_for(nbytes):
    return max(3, min(200, (1 << 30) // max(nbytes, 1) // 8))


def bench(ctx, max_bytes, configs):
    rank, peer = ctx.get_rank(), 1 - ctx.get_rank()
    sms = ctx.get_cu_count()
    src = ctx.randn(max_bytes // 4, dtype=torch.float32)
    dst = ctx.zeros(max_bytes // 4, dtype=torch.float32)
    flags = ctx.zeros(2, dtype=torch.int32)
    counters = ctx.zeros(1 << 20, dtype=torch.int32)
    peer_dst = peer_view(ctx, dst, max_bytes // 4)
    hb = ctx.get_heap_bases()
    rows, checks = [], {}
    ctx.barrier()
    if rank == 0:
        sizes = [1 << s for s in range(12, max_bytes.bit_length(), 2)]
        for nbytes in sizes:
            n = nbytes // 4
            reps = reps_for(nbytes)
            t = time_us(lambda: peer_dst[:n].copy_(src[:n]), reps)
            rows.append(dict(op="copy_engine", bytes=nbytes, time_us=t, gbps=nbytes / t / 1e3, config="cudaMemcpy"))
            for op in ("put", "get", "store", "load"):
                best = None
                for block, warps, per_sm in configs:
                    grid = (max(1, min(triton.cdiv(n, block), sms * per_sm)),)
                    launch = lambda: rma_bw_kernel[grid](src, dst, n, rank, peer, hb, OP=op, BLOCK=block,  # noqa
                                                         num_warps=warps)
                    t = time_us(launch, reps)
                    if best is None or t < best[0]:
                        best = (t, f"BLOCK={block} warps={warps} ctas/SM={per_sm}")
                rows.append(dict(op=op, bytes=nbytes, time_us=best[0], gbps=nbytes / best[0] / 1e3, config=best[1]))
            print(f"  {nbytes:>11} B  " + "  ".join(f"{r['op']}={r['gbps']:.0f}" for r in rows[-5:]), flush=True)
        # correctness of the timed kernels at the largest size, on fresh data
        n = max_bytes // 4
        peer_src = peer_view(ctx, src, n)
        for op in ("put", "get", "store", "load"):
            src.normal_()
            dst.fill_(float("nan"))
            peer_dst.fill_(float("nan"))
            rma_bw_kernel[(sms * 4,)](src, dst, n, rank, peer, hb, OP=op, BLOCK=4096, num_warps=8)
            torch.cuda.synchronize()
            pushed = op in ("put", "store")
            checks[op] = bool(torch.equal(peer_dst[:n], src[:n]) if pushed else torch.equal(dst[:n], peer_src))
        ptx = rma_bw_kernel.warmup(src, dst, n, rank, peer, hb, OP="put", BLOCK=4096, num_warps=8, grid=(1,)).asm["ptx"]
        checks["put_16B_stores"] = "st.global.v4" in ptx
        for n in (1 << 10, 1 << 20):
            t = time_us(lambda: atomic_bw_kernel[(min(triton.cdiv(n, 1024), sms * 4),)](  # noqa
                counters, n, rank, peer, hb, BLOCK=1024, num_warps=4), reps_for(n * 64))
            rows.append(dict(op="atomic_add", bytes=n * 4, time_us=t, gbps=n * 4 / t / 1e3,
                             config=f"{n / t:.0f} Mops/s int32 relaxed.sys"))
    ctx.barrier()
    for iters in (10, 2000):  # the first launch compiles, at a different pace on each rank: not timed
        flags.zero_()
        ctx.barrier()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        pingpong_kernel[(1,)](flags, iters, rank, hb, num_warps=1)
        b.record()
        b.synchronize()
        ctx.barrier()
    if rank == 0:
        t = a.elapsed_time(b) * 1e3 / iters
        rows.append(dict(op="pingpong", bytes=4, time_us=t, gbps=float("nan"), config=f"round trip, {iters} iters"))
    return rows, checks


def peer_view(ctx, local, n):
    """The peer's copy of heap tensor `local` (first n float32 elements), as a tensor of this process."""
    peer = 1 - ctx.get_rank()
    ptr = ctx.heap.bases[peer] + (local.data_ptr() - ctx.heap.bases[ctx.get_rank()])
    return torch.as_tensor(_DevicePointer(ptr, n * 4, ctx.heap), device=ctx.get_device()).view(torch.float32)[:n]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--max-bytes", type=int, default=1 << 30)
    p.add_argument("--out", default="results")
    p.add_argument("--commit", default=os.environ.get("IRIS_COMMIT"))
    args = p.parse_args()
    if iris.BACKEND != "cuda" or torch.cuda.device_count() < 2:
        sys.exit("benchmarks/rma.py needs two CUDA GPUs")
    configs = [(4096, 8, 4), (8192, 8, 2), (2048, 4, 8), (4096, 16, 2)]
    heap = 2 * args.max_bytes + (64 << 20)
    (rows, checks), _ = iris.spawn(bench, 2, args.max_bytes, configs, heap_size=heap)
    import pandas as pd

    commit = args.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                           text=True).stdout.strip() or "unknown"
    df = pd.DataFrame(rows)
    df["device"] = f"2x {torch.cuda.get_device_name(0)}"
    df["date"] = datetime.date.today().isoformat()
    df["commit"] = commit
    df["command"] = "python " + " ".join(sys.argv)
    os.makedirs(args.out, exist_ok=True)
    df.to_csv(os.path.join(args.out, "rma.csv"), index=False)
    plot(df, os.path.join(args.out, "rma.png"))
    big = df[df.bytes == df.bytes[df.op == "copy_engine"].max()].set_index("op")
    ce = big.loc["copy_engine", "gbps"]
    print(f"checks: {checks}")
    print(f"at {int(big.loc['copy_engine', 'bytes'])} bytes: copy engine {ce:.0f} GB/s; " + ", ".join(
        f"{op} {big.loc[op, 'gbps']:.0f} GB/s ({big.loc[op, 'gbps'] / ce:.3f}x)" for op in ("put", "get", "store",
                                                                                              "load")))
    pp = df[df.op == "pingpong"].time_us.iloc[0]
    print(f"flag ping-pong round trip: {pp:.2f} us; atomics: " + "; ".join(df[df.op == "atomic_add"].config))
    if not all(checks.values()):
        sys.exit(f"correctness checks failed: {checks}")


def plot(df, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8))
    styles = {"copy_engine": ("k", "--"), "put": ("tab:blue", "-"), "get": ("tab:orange", "-"),
              "store": ("tab:green", ":"), "load": ("tab:red", ":")}
    for op, (color, ls) in styles.items():
        d = df[df.op == op]
        ax.plot(d.bytes, d.gbps, ls, color=color, marker="o", ms=3, label=op.replace("_", " "))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("GB/s (rank 0 → rank 1)")
    pp = df[df.op == "pingpong"].time_us.iloc[0]
    ax.set_title(f"Triton RMA over NVLink vs copy engine — {df.device.iloc[0]}\nflag ping-pong round trip {pp:.2f} µs",
                 fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=130)


if __name__ == "__main__":
    main()
