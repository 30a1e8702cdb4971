"""Where the small-M GEMM loses to torch.matmul (one GPU, graph-timed): which cuBLAS kernel torch picks per shape
(its name says tile and split/stream-K), and a stripped persistent TMA GEMM with one mechanism toggled at a time:
device- vs host-built TMA descriptors, Hopper warp specialization of the K loop, a flattened tile/K loop nest,
TMA stores of C, split-K, 2-CTA clusters (`ctas2`), programmatic dependent launch with the next kernel let in at the
start (`pdl`, as iris.launched_early) or after the program's last tile (`pdl_late`).
Exploratory: its findings go into fused_ops/gemm.py and config.py, not its code.

    IRIS_BACKEND=cuda python benchmarks/gemm_probe.py --out results/gemm_probe
"""

import argparse
import itertools
import os
import sys

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
from triton.tools.tensor_descriptor import TensorDescriptor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.harness import graph_us, stamp  # noqa: E402
from fused_ops.gemm import sum_slices, tile_coords  # noqa: E402


@triton.jit
def probe_kernel(A, B, C, P, CNT, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                 GROUP_M: tl.constexpr, HOST_DESC: tl.constexpr, WS: tl.constexpr, FLATTEN: tl.constexpr,
                 TMA_STORE: tl.constexpr, SPLIT_K: tl.constexpr, PDL: tl.constexpr = 0):
    if PDL:  # launched with programmatic dependent launch: wait for the previous kernel; 1: let the next one launch now
        gdc_wait()
        if PDL == 1:
            gdc_launch_dependents()
    if HOST_DESC:
        a_d = A
        b_d = B
        c_d = C
    else:
        a_d = tl.make_tensor_descriptor(A, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
        b_d = tl.make_tensor_descriptor(B, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
        c_d = tl.make_tensor_descriptor(C, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_blocks = tl.cdiv(K, BK)
    per = tl.cdiv(k_blocks, SPLIT_K)
    units = num_pid_m * num_pid_n * SPLIT_K
    for unit in tl.range(tl.program_id(0), units, tl.num_programs(0), flatten=FLATTEN):
        tile = unit // SPLIT_K
        s = unit % SPLIT_K
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kk in tl.range(s * per, tl.minimum(s * per + per, k_blocks), warp_specialize=WS):
            a = a_d.load([pid_m * BM, kk * BK])
            b = b_d.load([kk * BK, pid_n * BN])
            acc = tl.dot(a, b, acc)
        done = True
        if SPLIT_K > 1:
            acc, done = sum_slices(acc, tile, s, P, CNT, SPLIT_K)
        if done:
            if TMA_STORE or HOST_DESC:  # a host-built C is a descriptor: stored through TMA either way
                c_d.store([pid_m * BM, pid_n * BN], acc.to(tl.bfloat16))
            else:
                rm = pid_m * BM + tl.arange(0, BM)
                rn = pid_n * BN + tl.arange(0, BN)
                tl.store(C + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16),
                         mask=(rm[:, None] < M) & (rn[None, :] < N))
    if PDL == 2:  # ... 2: only once this program's tiles are done
        gdc_launch_dependents()


def cublas_kernels(a, b, c):
    """Names and mean GPU time of the kernels torch.matmul launches for these operands."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
    ev = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
    return "; ".join(f"{e.key} ({e.device_time / 1:.1f}us x{e.count})" for e in ev)


TILES = [(64, 128, 128, 4, 4), (64, 128, 64, 6, 4), (128, 128, 64, 4, 8), (128, 128, 64, 4, 4), (128, 64, 128, 4, 4),
         (64, 64, 128, 4, 4), (128, 256, 64, 3, 8), (64, 256, 64, 4, 4)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results/gemm_probe")
    ap.add_argument("--shapes", nargs="+", type=lambda s: tuple(map(int, s.split("x"))),
                    default=[(256, 4096, 4096), (128, 8192, 8192), (128, 4096, 4096), (512, 4096, 4096),
                             (256, 4096, 2048), (256, 2048, 4096), (128, 4096, 2048), (512, 16384, 16384)])
    ap.add_argument("--mechanisms", nargs="+", default=["base", "host_desc", "ws", "flatten", "tma_store", "k2",
                                                        "host_desc+ws"])
    ap.add_argument("--tiles", nargs="+", help="BMxBNxBK:stages:warps ... instead of the default list")
    args = ap.parse_args()
    tile_list = TILES if not args.tiles else [
        tuple(map(int, t.split(":")[0].split("x"))) + tuple(map(int, t.split(":")[1:])) for t in args.tiles]
    import pandas as pd

    run_stamp = stamp(1, "benchmarks/gemm_probe.py")
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for m, n, k in args.shapes:
        g = torch.Generator(device="cuda").manual_seed(m + n + k)
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=g)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        ref = a.double() @ b.double()
        names = cublas_kernels(a, b, c)
        t_torch = graph_us(lambda: torch.matmul(a, b, out=c))
        print(f"{m}x{n}x{k}: torch {t_torch:.1f} us: {names}", flush=True)
        rows.append(dict(m=m, n=n, k=k, config="torch", mechanism="cublas", time_us=t_torch, torch_us=t_torch,
                         vs_torch=1.0, rel_error=0.0, correct=True, kernels=names, **run_stamp))
        for (bm, bn, bk, stages, warps), mech in itertools.product(tile_list, args.mechanisms):
            tiles = -(-m // bm) * -(-n // bn)
            split = 2 if "k2" in mech else 1
            if tiles * split > sms * 1.05 and split > 1:
                continue
            host = "host_desc" in mech
            p = torch.empty(max(1, tiles * split * bm * bn if split > 1 else 1), device="cuda", dtype=torch.float32)
            cnt = torch.zeros(tiles, device="cuda", dtype=torch.int32)
            if host:
                ops = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
                       TensorDescriptor.from_tensor(c, [bm, bn]))
            else:
                ops = (a, b, c)
            ctas = 2 if "ctas2" in mech else 1  # a cluster of 2 CTAs per program (Hopper), sharing the tile
            grid = (min(sms // ctas, tiles * split),)
            meta = dict(BM=bm, BN=bn, BK=bk, GROUP_M=8, HOST_DESC=host, WS="ws" in mech, FLATTEN="flatten" in mech,
                        TMA_STORE="tma_store" in mech, SPLIT_K=split, num_stages=stages, num_warps=warps,
                        num_ctas=ctas, **({"PDL": 2 if "pdl_late" in mech else 1, "launch_pdl": True}
                                          if "pdl" in mech else {}))
            name = f"{bm}x{bn}x{bk} s{stages} w{warps}"

            def call():
                probe_kernel[grid](*ops, p, cnt, m, n, k, **meta)
            try:
                c.fill_(float("nan"))
                call()
                torch.cuda.synchronize()
            except Exception as e:  # a mechanism the compiler refuses for this tile: recorded, not fatal
                print(f"  {name:20s} {mech:14s} failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}",
                      flush=True)
                rows.append(dict(m=m, n=n, k=k, config=name, mechanism=mech, error=str(e)[:300], **run_stamp))
                continue
            err = ((c.double() - ref).norm() / ref.norm()).item()
            t = graph_us(call)
            rows.append(dict(m=m, n=n, k=k, config=name, mechanism=mech, time_us=t, torch_us=t_torch,
                             vs_torch=t_torch / t, rel_error=err, correct=err < 1e-2, **run_stamp))
            print(f"  {name:20s} {mech:14s} {t:8.1f} us {t_torch / t:5.2f}x err {err:.0e}", flush=True)
    df = pd.DataFrame(rows)
    os.makedirs(args.out, exist_ok=True)
    df.to_csv(os.path.join(args.out, "gemm_probe.csv"), index=False)
    ok = df[df.mechanism != "cublas"].dropna(subset=["vs_torch"])
    print(ok.pivot_table(index=["m", "n", "k"], columns="mechanism", values="vs_torch", aggfunc="max").round(3)
          .to_string())
    best = ok.loc[ok.groupby(["m", "n", "k"]).vs_torch.idxmax()]
    print(best[["m", "n", "k", "config", "mechanism", "vs_torch"]].to_string())


if __name__ == "__main__":
    main()
