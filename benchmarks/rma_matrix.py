"""RMA between every pair of ranks, and all-to-all: any world size, one GPU per rank.

1. Pair matrix: for every ordered pair (src, dst), src alone puts 256 MiB into dst's heap (Triton kernel through
   iris.put) and copies the same bytes with the copy engine (torch copy into dst's mapped heap); GB/s of each.
2. All-to-all sweep: every rank stores (iris.store) one slice to every other rank at once, 64 KiB to 256 MiB per
   peer, and loads (iris.load) the same pattern; GB/s per rank of outgoing (store) or incoming (load) bytes.
Every transfer is checked on fresh data. Writes <out>/rma_matrix.csv and rma_matrix.png.

    python benchmarks/rma_matrix.py -n 4 --out results
"""

import argparse
import datetime
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from benchmarks.rma import rma_bw_kernel, time_us  # noqa: E402
from iris.heap import _DevicePointer  # noqa: E402


@triton.jit
def all_to_all_kernel(src, dst, n, cur, world, heap_bases, LOAD: tl.constexpr, BLOCK: tl.constexpr):
    """Store: slice `cur` of every peer's dst <- my src slice for that peer. Load: my dst slice p <- peer p's src
    slice for me. Consecutive jobs go to different peers, so every link is busy at once; own rank skipped."""
    pid, nprog = tl.program_id(0), tl.num_programs(0)
    chunks = tl.cdiv(n, BLOCK)
    for job in range(pid, (world - 1) * chunks, nprog):
        peer = (cur + 1 + job % (world - 1)) % world
        offs = (job // (world - 1)) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        if LOAD:
            v = iris.load(src + cur * n + offs, cur, peer, heap_bases, mask=m)
            tl.store(dst + peer * n + offs, v, mask=m)
        else:
            iris.store(dst + cur * n + offs, tl.load(src + peer * n + offs, mask=m), cur, peer, heap_bases, mask=m)


def peer_view(ctx, local, peer, n):
    ptr = ctx.heap.bases[peer] + (local.data_ptr() - ctx.heap.bases[ctx.get_rank()])
    return torch.as_tensor(_DevicePointer(ptr, n * 4, ctx.heap), device=ctx.get_device()).view(torch.float32)[:n]


def pair_matrix(ctx, nbytes):
    rank, world, hb = ctx.get_rank(), ctx.get_num_ranks(), ctx.get_heap_bases()
    n = nbytes // 4
    src, dst = ctx.randn(n, dtype=torch.float32), ctx.zeros(n, dtype=torch.float32)
    sms, rows = ctx.get_cu_count(), []
    for s in range(world):
        for d in range(world):
            if s == d:
                continue
            ctx.barrier()
            if rank == s:
                grid = (sms * 4,)
                put = lambda: rma_bw_kernel[grid](src, dst, n, s, d, hb, OP="put", BLOCK=4096, num_warps=8)  # noqa
                t_put = time_us(put, 10)
                remote = peer_view(ctx, dst, d, n)
                t_ce = time_us(lambda: remote.copy_(src), 10)
                src.normal_()
                remote.fill_(float("nan"))
                put()
                torch.cuda.synchronize()
                ok = bool(torch.equal(remote, src))
                rows.append(dict(test="pair", src=s, dst=d, bytes=nbytes, put_gbps=nbytes / t_put / 1e3,
                                 copy_engine_gbps=nbytes / t_ce / 1e3, correct=ok))
            ctx.barrier()
    return rows


def all_to_all(ctx, sizes):
    rank, world, hb, sms = ctx.get_rank(), ctx.get_num_ranks(), ctx.get_heap_bases(), ctx.get_cu_count()
    rows = []
    n_max = max(sizes) // 4
    src, dst = ctx.randn(world * n_max, dtype=torch.float32), ctx.zeros(world * n_max, dtype=torch.float32)
    for nbytes in sizes:
        n = nbytes // 4
        for load in (False, True):
            grid = (min(sms * 4, (world - 1) * triton.cdiv(n, 4096)),)
            run = lambda: all_to_all_kernel[grid](src, dst, n, rank, world, hb, LOAD=load, BLOCK=4096,  # noqa: E731
                                                  num_warps=8)
            ctx.barrier()
            t = time_us(run, max(3, min(100, (1 << 30) // (nbytes * world))))
            # check on fresh data: slice p of dst must equal peer p's slice `rank` (load) / peer p wrote slice p
            src[:world * n].normal_()
            dst[:world * n].fill_(float("nan"))
            ctx.barrier()
            run()
            ctx.barrier()
            expect = [peer_view(ctx, src, p, world * n)[rank * n:(rank + 1) * n] if load else
                      peer_view(ctx, src, p, world * n)[rank * n:(rank + 1) * n] for p in range(world)]
            ok = all(torch.equal(dst[p * n:(p + 1) * n], expect[p]) for p in range(world) if p != rank)
            ctx.barrier()
            t_max = torch.tensor([t], device=ctx.get_device())
            dist.all_reduce(t_max, op=dist.ReduceOp.MAX)
            oks = [None] * world
            dist.all_gather_object(oks, ok)
            if rank == 0:
                moved = nbytes * (world - 1)
                rows.append(dict(test="all_to_all_load" if load else "all_to_all_store", src=-1, dst=-1,
                                 bytes=nbytes, put_gbps=moved / t_max.item() / 1e3, copy_engine_gbps=float("nan"),
                                 correct=all(oks)))
                print(f"  all-to-all {'load ' if load else 'store'} {nbytes:>10} B per peer: "
                      f"{rows[-1]['put_gbps']:.0f} GB/s per rank  correct={all(oks)}", flush=True)
    return rows


def run(ctx, out, pair_bytes, commit, command):
    import pandas as pd

    rows = pair_matrix(ctx, pair_bytes)
    gathered = [None] * ctx.get_num_ranks()
    dist.all_gather_object(gathered, rows)
    a2a = all_to_all(ctx, [1 << s for s in range(16, 29, 2)])
    if ctx.get_rank() == 0:
        df = pd.DataFrame([r for rs in gathered for r in rs] + a2a)
        df["world_size"] = ctx.get_num_ranks()
        df["device"] = f"{ctx.get_num_ranks()}x {torch.cuda.get_device_name()}"
        df["date"], df["commit"], df["command"] = datetime.date.today().isoformat(), commit, command
        os.makedirs(out, exist_ok=True)
        df.to_csv(os.path.join(out, "rma_matrix.csv"), index=False)
        pairs = df[df.test == "pair"]
        print(pairs.pivot(index="src", columns="dst", values="put_gbps").round(0).to_string())
        print(pairs.pivot(index="src", columns="dst", values="copy_engine_gbps").round(0).to_string())
        plot(df, os.path.join(out, "rma_matrix.png"))
        return bool(df.correct.all())
    return None


def plot(df, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = df[df.test == "pair"]
    world = int(df.world_size.iloc[0])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    mat = pairs.pivot(index="src", columns="dst", values="put_gbps").reindex(index=range(world), columns=range(world))
    ce = pairs.pivot(index="src", columns="dst", values="copy_engine_gbps").reindex(index=range(world),
                                                                                   columns=range(world))
    im = ax1.imshow(mat.values, cmap="viridis")
    for s in range(world):
        for d in range(world):
            if s != d:
                ax1.text(d, s, f"{mat.values[s, d]:.0f}\n({mat.values[s, d] / ce.values[s, d]:.2f}x CE)",
                         ha="center", va="center", color="w", fontsize=8)
    ax1.set(title="iris.put GB/s, src row -> dst column (256 MiB)", xlabel="dst rank", ylabel="src rank",
            xticks=range(world), yticks=range(world))
    fig.colorbar(im, ax=ax1, shrink=0.8)
    for test, style in (("all_to_all_store", "o-"), ("all_to_all_load", "s--")):
        d = df[df.test == test]
        ax2.plot(d.bytes, d.put_gbps, style, label=test.replace("_", " "))
    ax2.set(xscale="log", xlabel="bytes per peer", ylabel="GB/s per rank (all peers at once)",
            title=f"all-to-all, {world} ranks")
    ax2.grid(alpha=0.3)
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "--num_ranks", type=int, default=torch.cuda.device_count() if torch.cuda.is_available()
                   else 2)
    p.add_argument("--pair-bytes", type=int, default=256 << 20)
    p.add_argument("--out", default="results")
    args = p.parse_args()
    if iris.BACKEND != "cuda":
        raise SystemExit("rma_matrix measures GPU links: run it on GPUs")
    commit = os.environ.get("IRIS_COMMIT", "?")
    command = "python benchmarks/rma_matrix.py " + " ".join(sys.argv[1:])
    ok = iris.spawn(run, args.num_ranks, args.out, args.pair_bytes, commit, command,
                    heap_size=int(args.pair_bytes * 2 + args.num_ranks * (256 << 20) * 2 + (256 << 20)))[0]
    if not ok:
        raise SystemExit("some transfers were wrong")


if __name__ == "__main__":
    main()
