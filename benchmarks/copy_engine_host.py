"""Host time of a copy-engine call's side-stream operations, issued through the checked API (get/put/write/wait on
sliced tensors) or replayed from a plan (iris.CopyEngine.plan), as gemm_all_reduce/copy_engine issues them: per
chunk a stream wait on a count, a write lowering it, and a put with its flag. The waits are met at once (their flags
are raised beforehand) and the puts go to this rank's own heap, so one GPU suffices: what is timed is the host's
part, which is what an eager call of these variants was bound by (results/current/host/eager_host_profile_182b854.log).
Writes copy_engine_host.csv.

    python benchmarks/copy_engine_host.py [--chunks 4 16 64] [--out results]
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
from benchmarks.harness import host_us, stamp  # noqa: E402

ROWS, COLS = 4096, 256  # 2 MiB of fp32, split into the chunks


def bench(ctx, chunk_counts):
    rank = ctx.get_rank()
    src, dst = ctx.randn(ROWS, COLS), ctx.zeros(ROWS, COLS)
    rows = []
    for chunks in chunk_counts:
        counts, flags = ctx.zeros(chunks, dtype=torch.int32), ctx.zeros(chunks, dtype=torch.int32)
        step = ROWS // chunks

        def call(key):
            counts.fill_(1)  # the waits below are met (a kernel would count them up)
            with ctx.copy_engine() as ce:
                def operations():
                    for j in range(chunks):
                        ce.wait(counts[j:][:1], 1)
                        ce.write(counts[j:][:1], 0)
                        ce.put(dst[j * step:(j + 1) * step], src[j * step:(j + 1) * step], rank, flag=flags[j:][:1])

                ce.plan(key, operations)

        for mode, key in (("api", None), ("plan", ("bench", chunks))):
            call(key)  # records the plan
            us = host_us(lambda: call(key), calls=20, repeats=5)
            ok = torch.equal(dst, src) and flags.tolist() == [1] * chunks
            dst.zero_()
            flags.zero_()
            rows.append(dict(mode=mode, chunks=chunks, operations=4 * chunks, host_us=us,
                             per_operation_us=us / (4 * chunks), correct=ok))
    ctx.barrier()
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chunks", type=int, nargs="+", default=[4, 16, 64])
    p.add_argument("--out", default="results")
    args = p.parse_args()
    if iris.BACKEND != "cuda":
        sys.exit("benchmarks/copy_engine_host.py times CUDA driver calls: it needs a CUDA GPU")
    import pandas as pd

    rows = iris.spawn(bench, 1, args.chunks, heap_size=64 << 20)[0]
    df = pd.DataFrame(rows).assign(**stamp(1, "benchmarks/copy_engine_host.py"))
    os.makedirs(args.out, exist_ok=True)
    df.to_csv(os.path.join(args.out, "copy_engine_host.csv"), index=False)
    print(df[["mode", "chunks", "operations", "host_us", "per_operation_us", "correct"]].to_string(index=False))
    for chunks, group in df.groupby("chunks"):
        api, plan = (group[group["mode"] == m]["host_us"].iloc[0] for m in ("api", "plan"))
        print(f"{chunks} chunks: plan {plan:.1f} us vs api {api:.1f} us per call ({api / plan:.2f}x)")
    if not df["correct"].all():
        sys.exit("a call moved the wrong bytes or left a flag wrong")


if __name__ == "__main__":
    main()
