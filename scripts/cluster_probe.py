"""Where clusters of 2 CTAs cost time in the Gluon kernel (fused_ops/wgmma.py, run(cluster=...)), on one Hopper GPU:

    python scripts/cluster_probe.py [MxNxK ...]

For each GEMM (bf16, 128x160 tiles, as the defaults run 1024x2304x3584), timed in CUDA graphs against the plain
kernel in the same run: the plain kernel's code launched in clusters of 2 (no multicast: the launch alone), and the
cluster kernels sharing B (1) and A (2). Also prints how many clusters of 2 the driver can keep resident at once with
this kernel's shared memory (cuOccupancyMaxActiveClusters).
"""

import sys

import torch
import triton

sys.path[:0] = ["."]
from benchmarks.harness import paired_graph_us  # noqa: E402
from fused_ops import wgmma  # noqa: E402


def main():
    shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[1:]] or [(1024, 2304, 3584), (1024, 1536, 4096)]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(torch.cuda.get_device_name(), triton.__version__)
    for m, n, k in shapes:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        ref = a.float() @ b.float()

        def plain():
            wgmma.run(a, b, c, 128, 64, 4, sms, rem=32)

        args, consts, units, _ = wgmma.kernel_args(a, b, c, 128, 64, 4, rem=32)
        consts["GROUP_M"] = 9  # a compiled kernel of its own, launched in clusters of 2 below
        kernel = wgmma.wgmma_ws_kernel.warmup(*args, **consts, num_warps=4, grid=(1,))
        warps, _, shared = kernel.packed_metadata
        kernel.packed_metadata = (warps, 2, shared)
        kernel._init_handles()
        fit = triton.runtime.driver.active.utils.cuOccupancyMaxActiveClusters(kernel.function, shared, 2)

        def launch_only():
            wgmma.wgmma_ws_kernel[(min(sms // 2, triton.cdiv(units, 2)),)](*args, **consts, num_warps=4)

        def shared_b():
            wgmma.run(a, b, c, 128, 64, 4, sms, rem=32, cluster=1)

        def shared_a():
            wgmma.run(a, b, c, 128, 64, 4, sms, rem=32, cluster=2)
        print(f"{m}x{n}x{k}: {units} tiles of 128x160, {shared} bytes of shared memory a CTA, "
              f"{fit} clusters of 2 resident at once")
        def coupled_b():
            wgmma.run(a, b, c, 128, 64, 4, sms, rem=32, cluster=3)

        def coupled_a():
            wgmma.run(a, b, c, 128, 64, 4, sms, rem=32, cluster=4)
        for name, fn in (("plain code, clusters of 2", launch_only), ("cluster 1 (B shared)", shared_b),
                         ("cluster 2 (A shared)", shared_a), ("cluster 3 (as 1, no multicast)", coupled_b),
                         ("cluster 4 (as 2, no multicast)", coupled_a)):
            c.fill_(float("nan"))
            fn()
            err = ((c.float() - ref).norm() / ref.norm()).item()
            t, t_plain = paired_graph_us(fn, plain, rounds=5)
            print(f"  {name:28s} {t:8.1f} µs  plain {t_plain:8.1f} µs  {t_plain / t:5.2f}x  err {err:.1e}")


if __name__ == "__main__":
    main()
