"""The catalog's GEMM alone (fused_ops/gemm.py's persistent tile loop, as the fused ops run it) against torch.matmul,
on one GPU, graph-timed (10 calls captured; each configuration's graph replayed in turns with torch.matmul's, so
their ratio does not drift with the clocks), bf16. Each shape runs the per-device default configuration and
a few alternatives, so the defaults can follow the measurement. Every result is checked against torch.matmul first.
Writes <out>/gemm.csv.

    python benchmarks/gemm.py --out results
"""

import argparse
import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import iris  # noqa: E402
import torch  # noqa: E402

from benchmarks.harness import paired_graph_us, stamp  # noqa: E402
from fused_ops import problem as _problem  # noqa: E402
from fused_ops.config import Config  # noqa: E402
from fused_ops.gemm import gemm_kernel  # noqa: E402
from fused_ops.problem import Problem  # noqa: E402
from fused_ops.registry import OPS  # noqa: E402

# (block_m, block_n, block_k, group_m, gemm_sms, comm_sms, num_stages, num_warps, tma, split_k); None: the device
# default. 64-row tiles run up to M = 4096.
CANDIDATES = {"default": None,
              "default, device-built descriptors": None,  # TMA descriptors made by every program, as before 2026-11-23
              "128x256x64 s3 w8": Config(128, 256, 64, 8, None, None, 3, 8),
              "128x256x64 s4 w8": Config(128, 256, 64, 8, None, None, 4, 8),
              "128x128x64 s4 w8": Config(128, 128, 64, 8, None, None, 4, 8),
              "128x128x64 s4 w4": Config(128, 128, 64, 8, None, None, 4, 4),
              "128x128x64 s6 w8": Config(128, 128, 64, 8, None, None, 6, 8),
              # the last, partial wave's tiles split along K (split_k as the defaults choose it for the tail)
              "128x256x64 s3 w8 tail": Config(128, 256, 64, 8, None, None, 3, 8, split_tail=True),
              "128x128x64 s6 w8 tail": Config(128, 128, 64, 8, None, None, 6, 8, split_tail=True),
              "64x128x64 s4 w4": Config(64, 128, 64, 8, None, None, 4, 4),
              "64x64x128 s4 w4": Config(64, 64, 128, 8, None, None, 4, 4),
              "64x128x128 s3 w4": Config(64, 128, 128, 8, None, None, 3, 4),
              "64x256x64 s4 w4": Config(64, 256, 64, 8, None, None, 4, 4),
              # two programs per SM ("x2": gemm_sms = 2 x SMs, set per device): where both fit (shared memory,
              # registers), one program's epilogue overlaps the other's main loop, as warp specialization would
              "128x128x64 s2 w8 x2": Config(128, 128, 64, 8, None, None, 2, 8),
              "128x128x64 s3 w8 x2": Config(128, 128, 64, 8, None, None, 3, 8),
              "128x128x64 s3 w4 x2": Config(128, 128, 64, 8, None, None, 3, 4),
              "128x256x64 s2 w8 x2": Config(128, 256, 64, 8, None, None, 2, 8)}
# Where tiles are few (M <= 1024): split-K ("kS": S slices of K per tile), and more shapes of tile, pipeline depth
# and warps.
SMALL_M_CANDIDATES = {"128x128x64 s4 w8 k2": Config(128, 128, 64, 8, None, None, 4, 8, split_k=2),
                      "128x128x64 s4 w8 k4": Config(128, 128, 64, 8, None, None, 4, 8, split_k=4),
                      "128x256x64 s3 w8 k2": Config(128, 256, 64, 8, None, None, 3, 8, split_k=2),
                      "128x256x64 s3 w8 k4": Config(128, 256, 64, 8, None, None, 3, 8, split_k=4),
                      "64x128x128 s3 w4 k2": Config(64, 128, 128, 8, None, None, 3, 4, split_k=2),
                      "64x256x64 s4 w4 k2": Config(64, 256, 64, 8, None, None, 4, 4, split_k=2),
                      "128x64x64 s4 w4": Config(128, 64, 64, 8, None, None, 4, 4),
                      "128x64x128 s3 w4": Config(128, 64, 128, 8, None, None, 3, 4),
                      "64x128x128 s4 w4": Config(64, 128, 128, 8, None, None, 4, 4),
                      "64x128x128 s3 w8": Config(64, 128, 128, 8, None, None, 3, 8),
                      "64x64x256 s3 w4": Config(64, 64, 256, 8, None, None, 3, 4),
                      "64x128x64 s6 w4": Config(64, 128, 64, 8, None, None, 6, 4),
                      "64x128x64 s8 w4": Config(64, 128, 64, 8, None, None, 8, 4),
                      "128x128x64 s6 w8 k2": Config(128, 128, 64, 8, None, None, 6, 8, split_k=2)}

def shapes(small=False):
    """The default sweep's hidden sizes with M from 128 up, plus the paper's 8192 x 4608 x 36864; at M <= 512 also
    the GEMMs a rank runs in the 2-GPU fused ops (K halved: all-reduce, reduce-scatter; N halved: all-scatter).
    small: M <= 1024 only."""
    hs, ms = (4096, 8192, 16384), (128, 256, 512, 1024) + (() if small else (4096, 16384))
    full = [(m, h, h) for h in hs for m in ms] + ([] if small else [(8192, 4608, 36864)])
    return full + [s for h in hs for m in (128, 256, 512) for s in ((m, h, h // 2), (m, h // 2, h))]


def rank_shapes(world=2):
    """The GEMMs one rank runs in the default sweep's fused ops where M >= 1024 (where the 128-row tiles run): N / world
    (all-scatter, and one all-gather shard: M / world rows too), K / world (all-reduce, reduce-scatter), and M / world
    rows by K / world (one phase of the phased reduce-scatter). Their tile counts decide how full the last wave is."""
    full = [(m, h, h) for h in (4096, 8192, 16384) for m in (1024, 4096, 16384)] + [(8192, 4608, 36864)]
    out = []
    for m, n, k in full:
        for s in ((m, n // world, k), (m, n, k // world), (m // world, n // world, k), (m // world, n, k // world)):
            if s not in out:
                out.append(s)
    return out


def run(ctx, args, run_stamp):
    variant = OPS["gemm_all_scatter"].variants["bulk_sync"]
    pdl = bool(iris.pdl_launch())  # programmatic dependent launch, as the fused ops launch (IRIS_PDL=0: off)
    import pandas as pd

    os.makedirs(args.out, exist_ok=True)
    rows = []
    for m, n, k in args.shapes or (rank_shapes() if args.rank_shapes else shapes(args.small)):
        g = torch.Generator(device=ctx.get_device()).manual_seed(m + n + k)
        a = torch.randn(m, k, device=ctx.get_device(), dtype=torch.bfloat16, generator=g)
        b = torch.randn(k, n, device=ctx.get_device(), dtype=torch.bfloat16, generator=g)
        c = torch.empty(m, n, device=ctx.get_device(), dtype=torch.bfloat16)
        ref = a.double() @ b.double()
        torch.matmul(a, b, out=c)
        for name, cfg in {**CANDIDATES, **(SMALL_M_CANDIDATES if m <= 1024 else {})}.items():
            if args.configs and name not in args.configs:
                continue
            if cfg is not None and cfg.block_m == 64 and m > 4096:
                continue  # 64-row tiles are for small M
            if cfg is not None and cfg.split_k is None and not cfg.split_tail:  # whole tiles: not the default's
                cfg = dataclasses.replace(cfg, split_k=1, split_tail=False)  # split (the default may split a tail)
            if name.endswith(" x2"):
                cfg = dataclasses.replace(cfg, gemm_sms=2 * ctx.get_cu_count())
            _problem.HOST_DESCRIPTORS = "device-built" not in name
            p = Problem(ctx, "gemm_all_scatter", variant, a, b, c, m, n, k, cfg)
            if p.cfg.split_k > 1 and not p.cfg.split_tail and p.num_tiles >= ctx.get_cu_count():
                continue  # tiles enough for every SM: nothing for split-K to fill
            flags, epoch = p.no_sync()

            def call():
                return gemm_kernel[p.grid(p.cfg.gemm_sms)](*p.gemm_args(), c, c.stride(0), c.stride(1), 0, flags,
                                                           epoch, 0, *p.rank_args(), SIGNAL="none", **p.meta())
            c.fill_(float("nan"))
            compiled = call()
            err = ((c.double() - ref).norm() / ref.norm()).item()
            t, t_torch = paired_graph_us(call, lambda: torch.matmul(a, b, out=c))  # torch again, in turns
            rows.append(dict(m=m, n=n, k=k, config=name, host_descriptors=_problem.HOST_DESCRIPTORS, pdl=pdl,
                             block_m=p.cfg.block_m, block_n=p.cfg.block_n,
                             block_k=p.cfg.block_k, num_stages=p.cfg.num_stages, num_warps=p.cfg.num_warps,
                             split_k=p.cfg.split_k, split_tail=p.cfg.split_tail,
                             tma=p.tma, programs=p.grid(p.cfg.gemm_sms)[0],
                             shared_kb=compiled.metadata.shared / 1024 if compiled is not None else None,
                             regs=getattr(compiled, "n_regs", None), time_us=t, torch_us=t_torch, vs_torch=t_torch / t,
                             tflops=2 * m * n * k / t / 1e6, rel_error=err, correct=err < 1e-2, dtype="bfloat16",
                             **run_stamp))
            _problem.HOST_DESCRIPTORS = True
            print(f"{m:>6d}x{n}x{k} {name:18s} {t:9.1f} µs  torch {t_torch:9.1f}  {t_torch / t:5.2f}x  err {err:.1e}",
                  flush=True)
        df = pd.DataFrame(rows)  # after every shape: a run cut short keeps what it measured
        df.to_csv(os.path.join(args.out, "gemm.csv"), index=False)
    d = df[df.config == "default"].set_index(["m", "n", "k"])
    best = df.loc[df.groupby(["m", "n", "k"]).vs_torch.idxmax()].set_index(["m", "n", "k"])
    print(d[["vs_torch"]].join(best[["config", "vs_torch"]], rsuffix="_best").to_string())
    print(f"wrote {args.out}/gemm.csv ({len(df)} rows, all correct: {bool(df.correct.all())})")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="results")
    p.add_argument("--small", action="store_true", help="M <= 1024 only (where tiles are few)")
    p.add_argument("--shapes", nargs="+", type=lambda s: tuple(map(int, s.split("x"))), help="MxNxK ... instead")
    p.add_argument("--rank-shapes", action="store_true", help="the GEMMs a rank runs in the 2-GPU default sweep, "
                                                              "M >= 1024 (rank_shapes)")
    p.add_argument("--configs", nargs="+", help="only these candidate names (e.g. default '64x128x64 s8 w4')")
    args = p.parse_args()
    unknown = set(args.configs or ()) - set(CANDIDATES) - set(SMALL_M_CANDIDATES)
    if unknown:
        raise SystemExit(f"unknown configs {sorted(unknown)}; known: {sorted(CANDIDATES) + sorted(SMALL_M_CANDIDATES)}")
    if iris.BACKEND != "cuda":
        raise SystemExit("gemm.py times CUDA graphs on one GPU: run it with IRIS_BACKEND=cuda")
    iris.spawn(run, 1, args, stamp(1, "benchmarks/gemm.py"), heap_size=4 << 30)


if __name__ == "__main__":
    main()
