"""Where the host time of a prepared eager collective call goes: cProfile of repeated calls, and the time per call
of each piece on its own (signature, lookup, capture check, the launch). One GPU, world 1.

    python scripts/eager_collective_profile.py
"""

import cProfile
import os
import pstats
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

import iris  # noqa: E402
from benchmarks.harness import host_us  # noqa: E402
from iris import collectives as coll  # noqa: E402
from iris import relaunch as rl  # noqa: E402


def main(ctx):
    x, y = ctx.randn(2048, dtype=torch.bfloat16), ctx.zeros(2048, dtype=torch.bfloat16)
    call = lambda: coll.all_reduce(ctx, x, variant="push", out=y)  # noqa: E731
    rl.MIN_BYTES = 0  # a 4 KiB call relaunched too, to compare
    for relaunch in (True, False):
        ctx.replay.clear()
        ctx.replay.relaunch = relaunch
        for _ in range(20):
            call()
        tk = coll.tensor_key

        def sig():  # what the front door computes before its prepared call
            return ctx.replay.lookup(("all_reduce", tk(x), tk(y), "sum", "push", None, False))

        prepared = sig()[1]
        print(f"relaunch={relaunch}: prepared call is {type(prepared).__name__}, relaunch "
              f"{type(getattr(prepared, 'relaunch', None)).__name__}")
        pieces = {"whole call": call,
                  "signature + lookup": sig,
                  "prepared call alone": prepared,
                  "capture check": torch.cuda.is_current_stream_capturing}
        if prepared.relaunch is not None:
            pieces["relaunch alone"] = prepared.relaunch
        if prepared.graph is not None:
            pieces["graph launch alone"] = prepared.launch_graph
            pieces["torch graph.replay"] = prepared.graph.replay
        for name, fn in pieces.items():
            print(f"  {name:22s} {host_us(fn, calls=2000):6.2f} us/call")
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(2000):
            call()
        prof.disable()
        torch.cuda.synchronize()
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    iris.spawn(main, 1, heap_size=1 << 28)
