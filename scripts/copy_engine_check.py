"""One-GPU checks of iris.CopyEngine's CUDA path (no peer needed): the host-API test's copies, stream wait and write,
eager and from a captured graph, on one rank. With --handshake also the pattern the copy-engine all-reduce relies on,
in miniature: a side stream waits (cuStreamWaitValue32) on a flag that a kernel holding every SM raises, then raises
the flag that kernel waits for, enqueued before the kernel (as copy_reduce.run does). On an H200
(0fc6953, results/archive/copy_engine/one_gpu_check.log) the host-API checks passed and the first handshake never
returned, not even after the kernel's own bounded wait should have ended it: run it under `timeout`.

    IRIS_BACKEND=cuda python scripts/copy_engine_check.py [--handshake]
    IRIS_BACKEND=cuda IRIS_WAIT_TIMEOUT_S=5 python scripts/copy_engine_check.py --graph-probe   # two GPUs, or one
"""

import os
import sys
import time

import torch
import triton
import triton.language as tl

sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "tests")]
import iris  # noqa: E402


@triton.jit
def handshake_kernel(ready, go, cur_rank, heap_bases):
    """Program 0 raises `ready`; every program waits for `go` (raised by the side stream after `ready`)."""
    if tl.program_id(0) == 0:
        iris.signal(ready, 1, cur_rank, cur_rank, heap_bases)
    iris.wait(go, 1, cur_rank, heap_bases)


def check(ctx):
    from test_host_api import r_copy_engine

    print("host API test ...", flush=True)
    results = {"host_api_test": r_copy_engine(ctx)}
    print("host API test:", results, flush=True)
    if "--handshake" not in sys.argv:
        return results
    sms = ctx.get_cu_count()
    times = []
    for i in range(20):
        print("handshake", i, flush=True)
        ready, go = ctx.zeros(1, dtype=torch.int32), ctx.zeros(1, dtype=torch.int32)
        ctx.barrier()
        t0 = time.perf_counter()
        ce = ctx.copy_engine()
        if "--wait-first" in sys.argv:  # the order that hung (0fc6953)
            ce.wait(ready, 1)
            ce.write(go, 1)
            handshake_kernel[(sms,)](ready, go, ctx.get_rank(), ctx.get_heap_bases())
        else:  # the kernel launched (and its module loaded) before the stream wait is enqueued
            handshake_kernel[(sms,)](ready, go, ctx.get_rank(), ctx.get_heap_bases())
            ce.wait(ready, 1)
            ce.write(go, 1)
        ce.join()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e6)
        ctx.check_device_errors()
    results["handshake_us_median"] = sorted(times)[len(times) // 2]
    return results


@triton.jit
def spin_kernel(go, cur_rank, heap_bases):
    """Every program waits for `go`: a persistent GEMM holding every SM while it waits for a copy's flag."""
    iris.wait(go, 1, cur_rank, heap_bases)


def graph_probe(ctx):
    """Why did a captured MLP step with copy-engine variants deadlock (results/archive/tp_mlp_ec4af0e.log) when their
    eager calls never did? Each rank launches a kernel that fills every SM's thread slots and waits for `go` (a GEMM
    block leaves room beside it; this leaves none, so any SM-based copy must wait for it); a side stream then raises
    `go`, after a 16 MiB copy from the peer's heap or right away. Eager, then captured into a CUDA graph and
    replayed, each wait bounded by IRIS_WAIT_TIMEOUT_S. A timeout only in the graph with the copy: the captured peer
    copy needs an SM (it ran as a kernel). A timeout in the graph without it too: the graph ran its branches one after
    the other. Two ranks, one GPU each; on one GPU, one rank whose "peer" is itself (a same-device copy, which
    answers the second question but not the first: a graph may treat a peer copy differently)."""
    if ctx.backend != "cuda":
        raise SystemExit("--graph-probe needs CUDA GPUs (IRIS_BACKEND=cuda)")
    sms, rank = ctx.get_cu_count(), ctx.get_rank()
    peer = (rank + 1) % ctx.get_num_ranks()
    src, dst, go = ctx.zeros(1 << 22), ctx.zeros(1 << 22), ctx.zeros(1, dtype=torch.int32)
    src.fill_(rank + 1.0)

    def step(copy):
        ce = ctx.copy_engine()
        # 16 programs of 128 threads per SM: every thread slot of every SM taken
        spin_kernel[(16 * sms,)](go, rank, ctx.get_heap_bases(), num_warps=4)
        if copy:
            ce.get(dst, src, peer)
        ce.write(go, 1)
        ce.join()
        go.zero_()

    results = {}
    for copy in (False, True):
        for mode in ("eager", "graph"):
            case = f"{'copy' if copy else 'no copy'}, {mode}"
            t0 = time.perf_counter()
            try:  # each case on its own: a timed-out wait is reported and the next case still runs
                step(copy)  # compiled and warm before any capture
                torch.cuda.synchronize()
                ctx.check_device_errors()
                ctx.barrier()
                dst.zero_()
                if mode == "graph":
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        step(copy)
                    ctx.barrier()
                t0 = time.perf_counter()
                if mode == "graph":
                    graph.replay()
                else:
                    step(copy)
                torch.cuda.synchronize()
                ctx.check_device_errors()
                outcome = "ok" if not copy or bool((dst == peer + 1.0).all()) else "wrong data"
            except Exception as err:  # a timed-out wait (DeviceWaitTimeout), or a capture CUDA refused
                go.zero_()
                torch.cuda.synchronize()
                outcome = f"{type(err).__name__}: {str(err)[:100]}"
            results[case] = f"{outcome} ({(time.perf_counter() - t0) * 1e6:.0f} us)"
            print(f"rank {rank}: {case}: {results[case]}", flush=True)
            ctx.barrier()
    return results


if __name__ == "__main__" and "--graph-probe" in sys.argv:
    for r, out in enumerate(iris.spawn(graph_probe, min(2, torch.cuda.device_count()))):
        print(f"rank {r}: {out}", flush=True)
elif __name__ == "__main__":
    out = iris.spawn(check, 1)[0]
    print(out)
    if not all(out["host_api_test"]):
        sys.exit("host API copy-engine checks failed")
