"""Host time of a replayed eager catalog call, split: the whole call (prepared, and not: the checks, auto's pick
and the replay key on every call), its graph's launch alone (ctypes cudaGraphLaunch, and torch's replay()), and
the Triton kernels in it. One GPU, world 1.

    python scripts/eager_fused_profile.py [op/variant ...] [--shape MxNxK]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

import fused_ops  # noqa: E402
import iris  # noqa: E402
from benchmarks.harness import host_us  # noqa: E402
from fused_ops import reference  # noqa: E402


def kernel_launches(call):
    """Kernels one eager call launches (Triton's launch path, replay off), counted with Triton's launch hook."""
    import triton

    seen = []
    hook = lambda *a: seen.append(1)  # noqa: E731
    triton.knobs.runtime.launch_enter_hook.add(hook)
    try:
        call()
        torch.cuda.synchronize()
    finally:
        triton.knobs.runtime.launch_enter_hook.remove(hook)
    return len(seen)


def body(ctx, specs, shape):
    m, n, k = shape
    for spec in specs:
        op, variant = spec.split("/")
        a, b = reference.make_inputs(op, 7, 1, 0, m, n, k, torch.bfloat16, ctx.get_device(), reference=False)[:2]
        c = ctx.zeros(*reference.local_shapes(op, m, n, k, 1)[2], dtype=torch.bfloat16)
        run = getattr(fused_ops, op)
        call = lambda: run(ctx, a, b, c, variant=variant)  # noqa: E731
        for _ in range(6):
            call()
        (key, graph), = [(kk, g) for kk, g in ctx.replay.graphs.items() if kk[:2] == (op, variant)][-1:]
        launcher = ctx.replay._launchers[key]
        whole = host_us(call, repeats=10)
        ctx.replay.prepared = lambda sig: None  # every call in full up to its graph launch, as before prepared calls
        unprepared = host_us(call, repeats=10)
        del ctx.replay.prepared
        alone = host_us(launcher, repeats=10)
        torch_replay = host_us(graph.replay, repeats=10)
        ctx.replay.enabled = False
        kernels = kernel_launches(call)
        ctx.replay.enabled = True
        print(f"{spec:40s} {m}x{n}x{k}: whole call {whole:6.2f} us (not prepared {unprepared:6.2f} us), graph "
              f"launch alone {alone:6.2f} us, torch "
              f"replay {torch_replay:6.2f} us, {kernels} Triton kernels", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("specs", nargs="*", default=["gemm_all_reduce/one_shot", "gemm_all_scatter/fused_sequential",
                                                 "gemm_reduce_scatter/fused", "all_gather_gemm/pull"])
    p.add_argument("--shape", default="128x4096x4096")
    args = p.parse_args()
    iris.spawn(body, 1, args.specs, tuple(int(v) for v in args.shape.split("x")), heap_size=1 << 30)


if __name__ == "__main__":
    main()
