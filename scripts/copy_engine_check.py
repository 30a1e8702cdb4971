"""One-GPU checks of iris.CopyEngine's CUDA path (no peer needed): the host-API test's copies, stream wait and write,
eager and from a captured graph, on one rank. With --handshake also the pattern the copy-engine all-reduce relies on,
in miniature: a side stream waits (cuStreamWaitValue32) on a flag that a kernel holding every SM raises, then raises
the flag that kernel waits for, enqueued before the kernel (as copy_reduce.run does). On an H200 (0fc6953,
results/copy_engine/one_gpu_check.log) the host-API checks passed and the first handshake never returned, not even
after the kernel's own bounded wait should have ended it: run it under `timeout`.

    IRIS_BACKEND=cuda python scripts/copy_engine_check.py [--handshake]
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


if __name__ == "__main__":
    out = iris.spawn(check, 1)[0]
    print(out)
    if not all(out["host_api_test"]):
        sys.exit("host API copy-engine checks failed")
