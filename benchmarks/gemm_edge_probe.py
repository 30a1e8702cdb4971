"""Why the catalog's GEMM loses at some shape classes (issue 31), one GPU, graph-timed against torch.matmul:
- n_edge: B (K x N, row-major) whose rows are not 128-byte aligned (N = 1000, 1440, 3000, 5000). The same shape with
  B in a padded-stride buffer (N unchanged), B stored K-major (an nn.Linear weight's .t()), 128-column tiles and the
  pointer path; torch on each layout too, and the cuBLAS kernel torch picks.
- k_dominant and 1-2 wave shapes: split-K with more slices and plain split-K on shapes of one partial wave.
Exploratory: its findings go into fused_ops/config.py and gemm.py.

    IRIS_BACKEND=cuda python benchmarks/gemm_edge_probe.py --out results/current/gemm/edge
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
import torch  # noqa: E402

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

from benchmarks.gemm_probe import cublas_kernels  # noqa: E402
from benchmarks.harness import paired_graph_us, stamp  # noqa: E402
from fused_ops.config import Config  # noqa: E402
from fused_ops import gemm  # noqa: E402
from fused_ops.gemm import gemm_kernel, store_vec, tile_coords  # noqa: E402
from fused_ops.problem import Problem  # noqa: E402
from fused_ops.registry import OPS  # noqa: E402


def cfg(bm, bn, bk, st, w, split_k=1, split_tail=False, **more):
    return Config(block_m=bm, block_n=bn, block_k=bk, group_m=8, num_stages=st, num_warps=w, split_k=split_k,
                  split_tail=split_tail, **more)


LAYOUT_SHAPES = [(4096, 1000, 8192), (4096, 3000, 4096), (4096, 1440, 2880), (2048, 5000, 2048), (4096, 1024, 8192)]
LAYOUT_CONFIGS = {"default": None, "128x128x64 s6 w8": cfg(128, 128, 64, 6, 8), "pointer": Config(tma=False)}
SPLIT_SHAPES = {
    # run 2 (after gemm.SERIAL_SLICES: more slices than 8 are added by atomics)
    (128, 128, 65536): [cfg(64, 64, 128, 4, 4, s) for s in (16, 33)] + [cfg(64, 128, 128, 4, 4, s) for s in (33, 64)]
    + [cfg(64, 64, 256, 3, 4, 33), cfg(128, 128, 64, 4, 8, 64)],
    (64, 256, 131072): [cfg(64, 64, 128, 4, 4, s) for s in (16, 33)] + [cfg(64, 128, 128, 4, 4, s) for s in (33, 64)]
    + [cfg(64, 64, 256, 3, 4, 33)],
    (256, 256, 32768): [cfg(64, 64, 128, 4, 4, s) for s in (8, 16)] + [cfg(64, 128, 128, 4, 4, s) for s in (8, 16)],
}


@triton.jit
def mixed_kernel(A, B, BD, C, M, N, K, stride_bk, stride_cm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                 GROUP_M: tl.constexpr, B_TMA: tl.constexpr, VEC: tl.constexpr):
    """A stripped persistent GEMM: A through a host TMA descriptor; B through one too (B_TMA) or through plain
    pointers (cp.async) with its row stride and N known to be multiples of VEC (16-byte accesses)."""
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    n = N // VEC * VEC
    sbk = stride_bk // VEC * VEC
    scm = stride_cm // VEC * VEC
    for tile in range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0)):
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        b_ptrs = B + rk[:, None].to(tl.int64) * sbk + rn[None, :]
        for kk in range(tl.cdiv(K, BK)):
            a = A.load([pid_m * BM, kk * BK])
            if B_TMA:
                b = BD.load([kk * BK, pid_n * BN])
            else:
                b = tl.load(b_ptrs, mask=(rk[:, None] < K - kk * BK) & (rn[None, :] < n), other=0.0)
            acc = tl.dot(a, b, acc)
            b_ptrs += BK * sbk
        rm = pid_m * BM + tl.arange(0, BM)
        tl.store(C + rm[:, None].to(tl.int64) * scm + rn[None, :], acc.to(C.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < n))


def time_mixed(a, b, c, ref, b_tma, bm=128, bn=256, bk=64, stages=3, warps=8):
    m, k = a.shape
    n = b.shape[1]
    vec = store_vec(b, b.stride(0), n)
    assert vec == store_vec(c, c.stride(0), n)
    ad = TensorDescriptor.from_tensor(a, [bm, bk])
    bd = TensorDescriptor.from_tensor(b, [bk, bn]) if b_tma else ad
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    grid = (min(sms, -(-m // bm) * -(-n // bn)),)

    def call():
        mixed_kernel[grid](ad, b, bd, c, m, n, k, b.stride(0), c.stride(0), BM=bm, BN=bn, BK=bk, GROUP_M=8,
                           B_TMA=b_tma, VEC=vec, num_stages=stages, num_warps=warps)
    c.fill_(float("nan"))
    call()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    t, t_torch = paired_graph_us(call, lambda: torch.matmul(a, b, out=c))
    return t, t_torch, err, vec

# run 3: the 1-2 wave shapes with plain split-K / split tails, whose slices are summed in order (the default up to
# gemm.SERIAL_SLICES) or, with --serial-slices 1, by atomics; two programs per SM at short K ("x2": gemm_sms 264).
TAIL_SHAPES = {
    (1024, 2560, 2880): [cfg(128, 256, 64, 3, 8, s) for s in (2, 3)] + [cfg(128, 128, 64, 6, 8, s) for s in (2, 3, 4)],
    (4096, 1280, 2880): [cfg(128, 128, 64, 6, 8, split_k=None, split_tail=True),
                         cfg(128, 256, 64, 3, 8, split_k=None, split_tail=True)],
    (1024, 2112, 7168): [cfg(128, 256, 64, 3, 8, s) for s in (2, 3)] + [cfg(128, 128, 64, 6, 8, split_k=None,
                                                                            split_tail=True)],
    (4096, 1440, 2880): [cfg(128, 256, 64, 3, 8, split_k=None, split_tail=True), cfg(128, 256, 64, 3, 8, 2)],
}
X2_SHAPES = {(m, n, k): [cfg(128, 128, 64, 3, 8, gemm_sms=264), cfg(128, 128, 64, 2, 8, gemm_sms=264),
                         cfg(128, 256, 64, 2, 8, gemm_sms=264), cfg(128, 256, 64, 3, 8)]
             for m, n, k in ((4096, 3584, 448), (4096, 3584, 896), (16384, 4096, 1024), (4096, 2880, 360))}


def layout_b(k, n, layout, dev, g):
    """B (K x N, values fixed by g) in a layout: row (contiguous), padNN (row stride rounded up to NN elements),
    kmajor (N x K contiguous storage, transposed view)."""
    b = torch.randn(k, n, device=dev, dtype=torch.bfloat16, generator=g)
    if layout == "row":
        return b
    if layout == "kmajor":
        return b.t().contiguous().t()
    pad = int(layout[3:])
    buf = torch.empty(k, -(-n // pad) * pad, device=dev, dtype=torch.bfloat16)
    buf[:, :n] = b
    return buf[:, :n]


def time_ours(ctx, a, b, c, config, ref):
    variant = OPS["gemm_all_scatter"].variants["bulk_sync"]
    m, k = a.shape
    n = b.shape[1]
    p = Problem(ctx=ctx, op="gemm_all_scatter", variant=variant, a=a, b=b, c=c, m=m, n=n, k=k, config=config)
    flags, epoch = p.no_sync()
    vec = store_vec(c, c.stride(0), n)

    def call():
        return gemm_kernel[p.grid(p.cfg.gemm_sms)](*p.gemm_args(), c, c.stride(0), c.stride(1), 0, flags, epoch, 0,
                                                   *p.rank_args(), SIGNAL="none", C_VEC=vec, **p.meta())
    c.fill_(float("nan"))
    call()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    t, t_torch = paired_graph_us(call, lambda: torch.matmul(a, b, out=c))
    return p, t, t_torch, err


def run(ctx, args, run_stamp):
    import pandas as pd

    if args.serial_slices is not None:
        gemm.SERIAL_SLICES = tl.constexpr(args.serial_slices)  # before any kernel compiles: a JIT global
    dev = ctx.get_device()
    rows = []
    os.makedirs(args.out, exist_ok=True)
    csv = "edge_probe.csv" if args.serial_slices is None else f"edge_probe_serial{args.serial_slices}.csv"

    def add(**row):
        rows.append(dict(**row, **run_stamp))
        pd.DataFrame(rows).to_csv(os.path.join(args.out, csv), index=False)

    if "layout" in args.parts:
        for m, n, k in LAYOUT_SHAPES:
            g = torch.Generator(device=dev).manual_seed(m + n + k)
            a = torch.randn(m, k, device=dev, dtype=torch.bfloat16, generator=g)
            c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            t_row = None
            for layout in ("row", "pad32", "pad64", "kmajor"):
                b = layout_b(k, n, layout, dev, torch.Generator(device=dev).manual_seed(7))
                ref = a.double() @ b.double()
                names = cublas_kernels(a, b, c)
                for name, config in LAYOUT_CONFIGS.items():
                    if layout != "row" and name != "default":
                        continue
                    try:
                        p, t, tt, err = time_ours(ctx, a, b, c, config, ref)
                    except Exception as e:  # noqa: BLE001  (a config the compiler refuses: noted)
                        print(f"{m}x{n}x{k} {layout} {name}: {type(e).__name__} {str(e)[:100]}", flush=True)
                        continue
                    if layout == "row" and name == "default":
                        t_row = tt
                    add(part="layout", m=m, n=n, k=k, layout=layout, config=name, cfg=p.cfg.describe(), tma=p.tma,
                        time_us=t, torch_us=tt, torch_row_us=t_row, vs_torch=tt / t, vs_torch_row=t_row / t,
                        rel_error=err, cublas=names)
                    print(f"{m:>6d}x{n}x{k} {layout:6s} {name:18s} {t:8.1f} us torch(same layout) {tt:8.1f} "
                          f"{tt / t:5.2f}x  vs torch row {t_row / t:5.2f}x  err {err:.0e} | {p.cfg.describe()} tma "
                          f"{p.tma} | {names[:90]}", flush=True)
                if layout == "kmajor":
                    continue
                for b_tma, (bm, bn, bk, st, w) in ((True, (128, 256, 64, 3, 8)), (False, (128, 256, 64, 3, 8)),
                                                   (False, (128, 256, 64, 4, 8)), (False, (128, 128, 64, 5, 8))):
                    name = f"stripped B {'tma' if b_tma else 'cp.async'} {bm}x{bn}x{bk} s{st}"
                    try:
                        t, tt, err, vec = time_mixed(a, b, c, ref, b_tma, bm, bn, bk, st, w)
                    except Exception as e:  # noqa: BLE001
                        print(f"{m}x{n}x{k} {layout} {name}: {type(e).__name__} {str(e)[:100]}", flush=True)
                        continue
                    add(part="layout", m=m, n=n, k=k, layout=layout, config=name, cfg=name, tma=int(b_tma),
                        time_us=t, torch_us=tt, torch_row_us=t_row, vs_torch=tt / t, vs_torch_row=t_row / t,
                        rel_error=err, cublas=names)
                    print(f"{m:>6d}x{n}x{k} {layout:6s} {name:32s} {t:8.1f} us torch {tt:8.1f} {tt / t:5.2f}x  vs "
                          f"torch row {t_row / t:5.2f}x  err {err:.0e} vec {vec}", flush=True)
    parts = {"split": SPLIT_SHAPES, "tail": TAIL_SHAPES, "x2": X2_SHAPES}
    for part in [p for p in args.parts if p in parts]:
        for (m, n, k), configs in parts[part].items():
            g = torch.Generator(device=dev).manual_seed(m + n + k)
            a = torch.randn(m, k, device=dev, dtype=torch.bfloat16, generator=g)
            b = torch.randn(k, n, device=dev, dtype=torch.bfloat16, generator=g)
            c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            ref = a.double() @ b.double()
            names = cublas_kernels(a, b, c)
            print(f"{m}x{n}x{k}: cublas {names}", flush=True)
            for config in [None] + configs:
                try:
                    p, t, tt, err = time_ours(ctx, a, b, c, config, ref)
                except Exception as e:  # noqa: BLE001
                    print(f"{m}x{n}x{k} {config}: {type(e).__name__} {str(e)[:100]}", flush=True)
                    continue
                name = "default" if config is None else p.cfg.describe()
                name += "" if gemm.SERIAL_SLICES.value > 1 or p.cfg.split_k == 1 else " atomic"
                add(part=part, m=m, n=n, k=k, layout="row", config=name, cfg=p.cfg.describe(), tma=p.tma,
                    time_us=t, torch_us=tt, vs_torch=tt / t, rel_error=err, cublas=names,
                    serial_slices=int(gemm.SERIAL_SLICES.value), programs=p.grid(p.cfg.gemm_sms)[0])
                print(f"{m:>6d}x{n}x{k} {name:45s} {t:8.1f} us torch {tt:8.1f} {tt / t:5.2f}x err {err:.0e} | "
                      f"{p.cfg.describe()}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="results/gemm_edge_probe")
    ap.add_argument("--parts", nargs="+", default=["layout", "split"], help="layout split tail x2")
    ap.add_argument("--serial-slices", type=int, default=None, help="gemm.SERIAL_SLICES for this run (1: every "
                                                                      "split tile's slices added by atomics)")
    args = ap.parse_args()
    if iris.BACKEND != "cuda":
        raise SystemExit("run it with IRIS_BACKEND=cuda")
    iris.spawn(run, 1, args, stamp(1, "benchmarks/gemm_edge_probe.py"), heap_size=4 << 30)


if __name__ == "__main__":
    main()
