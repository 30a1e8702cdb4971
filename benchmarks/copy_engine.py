"""Copy-engine transfers between two GPUs as all_gather_gemm/copy_engine uses them: both ranks pull the peer's
buffer at once (cudaMemcpyAsync from the peer's mapping), or push their own into the peer's; whole or in chunks,
each chunk followed by a flag write (cuStreamWriteValue32), eagerly or replayed from a graph; alone and while a large
torch.matmul runs on the main stream. GPU time only. Plus which engine ran each (the profiler names copy-engine
transfers "Memcpy ..." and anything an SM ran a kernel). Writes copy_engine.csv.

    python benchmarks/copy_engine.py [--out results]
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
from benchmarks.harness import stamp  # noqa: E402

SIZES = (1 << 20, 4 << 20, 16 << 20, 64 << 20)


def bench(ctx):
    rank, peer, rt = ctx.get_rank(), 1 - ctx.get_rank(), ctx.heap.rt
    src = ctx.zeros(SIZES[-1], dtype=torch.uint8).random_(0, 255)
    dst = ctx.zeros(SIZES[-1], dtype=torch.uint8)
    flags = ctx.zeros(64, dtype=torch.int32)
    x = torch.randn(8192, 8192, device=ctx.device, dtype=torch.bfloat16)
    side = torch.cuda.Stream(ctx.device)
    base = ctx.heap.bases
    driver = iris.copy_engine._driver()

    def enqueue(mode, nbytes, chunks, signal):
        """The copy as `chunks` copies on the side stream, each followed by a flag write if `signal`."""
        step = nbytes // chunks
        for i in range(chunks):
            mine, theirs = dst.data_ptr() + i * step, base[peer] + src.data_ptr() - base[rank] + i * step
            if mode == "push":  # the peer's dst <- my src
                mine, theirs = base[peer] + dst.data_ptr() - base[rank] + i * step, src.data_ptr() + i * step
            rt.memcpy_async(mine, theirs, step, side.cuda_stream)
            if signal:
                driver.stream_write_value32(side.cuda_stream, flags.data_ptr() + 4 * i, 1)

    def once(mode, nbytes, chunks, signal, with_gemm, graph):
        """GPU time of the copies alone: the side stream sleeps first, so the host has enqueued them all before the
        start event (host enqueue time stays out)."""
        ctx.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        main = torch.cuda.current_stream()
        side.wait_stream(main)
        with torch.cuda.stream(side):
            torch.cuda._sleep(1_000_000)  # ~0.5 ms
            start.record(side)
            if graph is not None:
                graph.replay()
            else:
                enqueue(mode, nbytes, chunks, signal)
            end.record(side)
        if with_gemm:
            x @ x
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1e3

    def captured(mode, nbytes, chunks):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.stream(side):
            g.capture_begin()
            enqueue(mode, nbytes, chunks, True)
            g.capture_end()
        return g

    rows = []
    for mode in ("pull", "push"):
        for nbytes in SIZES:
            for chunks, signal, graph in ((1, False, False), (1, True, False), (4, True, False), (8, True, False),
                                          (4, True, True)):
                for with_gemm in (False, True):
                    g = captured(mode, nbytes, chunks) if graph else None
                    us = sorted(once(mode, nbytes, chunks, signal, with_gemm, g) for _ in range(7))[3]
                    rows.append(dict(mode=mode, bytes=nbytes, chunks=chunks, flag_writes=signal, graph=graph,
                                     during_gemm=with_gemm, time_us=us, gbps=nbytes / us / 1e3))
    kinds = {}
    for mode in ("pull", "push"):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            once(mode, SIZES[1], 2, True, False, None)
        kinds[mode] = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
    ctx.barrier()
    return rows, kinds


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="results")
    args = p.parse_args()
    if iris.BACKEND != "cuda" or torch.cuda.device_count() < 2:
        sys.exit("benchmarks/copy_engine.py needs two CUDA GPUs")
    import pandas as pd

    (rows, kinds), _ = iris.spawn(bench, 2, heap_size=256 << 20)
    df = pd.DataFrame(rows).assign(**stamp(2, "benchmarks/copy_engine.py"))
    os.makedirs(args.out, exist_ok=True)
    df.to_csv(os.path.join(args.out, "copy_engine.csv"), index=False)
    cols = ["mode", "bytes", "chunks", "flag_writes", "graph", "during_gemm", "time_us", "gbps"]
    print(df[cols].to_string(index=False))
    for mode, names in kinds.items():
        print(f"{mode}: GPU activities {names}")


if __name__ == "__main__":
    main()
