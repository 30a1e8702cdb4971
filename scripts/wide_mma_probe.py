"""One MMA per k step on tiles 72-160 wide, from inline PTX, against Gluon's two (a power of two plus REM columns),
in the same small kernel: are its results right, and how much faster is it? The Gluon kernel's tiles of such widths
(fused_ops/wgmma.py, `rem=...`) run two MMAs per block of K, each reading the warpgroup's rows of A from shared memory
again; Gluon refuses an MMA whose width is not a power of two (`scripts/mma_width_probe.py`), and cuBLAS runs such
tiles at most of the GEMMs still below their floors (`results/current/gemm/gluon_limits/`). This sets the single MMA
from inline PTX (fused_ops/wide_mma, which the kernel now runs on K-major operands) beside Gluon's two, alone.

    IRIS_BACKEND=cuda python scripts/wide_mma_probe.py [--widths 96 144 ...] [--dtypes bf16 fp8] [--shapes MxNxK ...]
        [--out DIR]

The kernel: one program per 128 x W tile of C = A @ B^T (B K-major, N x K, as FP8 and nn.Linear store it), two
consumer warpgroups of 64 rows each, a load warp filling a ring of STAGES blocks of K by TMA, each block's MMAs left
in flight while the next block's issue (as wgmma_ws_kernel does). WIDE=1: fused_ops/wide_mma's MMA (its docstring
says how), B's stages a power of two rows deep or exactly W (--loads). WIDE=0: Gluon's
warpgroup_mma, P = the largest power of two below W, then W - P columns (W - P must be a power of two). FP8: e4m3
operands, one scale of 1, bf16 out. Both forms are checked against float64 on fresh inputs into a poisoned C, over
several calls in a row, then timed in turns in CUDA graphs. Needs a Hopper GPU; writes DIR/wide_mma.csv.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import triton  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    mbarrier, tma, warpgroup_mma, warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor  # noqa: E402

from fused_ops import wide_mma  # noqa: E402

BM = gl.constexpr(128)  # a tile's rows: two consumers of 64
STAGES = gl.constexpr(4)
ROW_BYTES = gl.constexpr(128)  # a block of K in bytes: one swizzled row of each operand (bf16: 64 deep; FP8: 128)


def split(width):
    """(P, R, CH): Gluon's two MMAs' widths (P + R = width) and the wide form's chunk width."""
    p = 1 << (width.bit_length() - 1)
    if p == width:
        p //= 2
    chunk = min(32, width & -width)
    if width % 8 or not 64 < width <= 256 or (width - p) & (width - p - 1):
        raise ValueError(f"width {width}: a multiple of 8 in 72-256 that is a power of two plus a power of two")
    return p, width - p, chunk


@gluon.constexpr_function
def chunk_layout(width, fp8):
    """The MMA accumulator layout of a 64 x width tensor over one warpgroup (wide_mma's, by operand width)."""
    return wide_mma.chunk_layout(width, 8 if fp8 else 16)


@gluon.jit
def store_cols(c_ptr, acc, row0, col0, M, N, ldc, layout: gl.constexpr):
    """acc (64 x its width) into C at [row0, col0], inside M x N."""
    rm = row0 + gl.arange(0, acc.shape[0], layout=gl.SliceLayout(1, layout))
    rn = col0 + gl.arange(0, acc.shape[1], layout=gl.SliceLayout(0, layout))
    gl.store(c_ptr + rm[:, None] * ldc + rn[None, :], acc.to(gl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@gluon.jit
def consumer(HALF: gl.constexpr, a_bufs, b_bufs, ready, empty, c_ptr, M, N, K, ldc,
             OFF_A: gl.constexpr, OFF_B: gl.constexpr,      # the ring's shared offsets (WIDE)
             W: gl.constexpr, P: gl.constexpr, CH: gl.constexpr, BK: gl.constexpr, ROWS_B: gl.constexpr,
             FP8: gl.constexpr, WIDE: gl.constexpr):
    """One 64-row warpgroup of a tile: every block of K, then its 64 x W of C."""
    row0 = gl.program_id(0) * BM + HALF * 64
    col0 = gl.program_id(1) * W
    blocks = gl.cdiv(K, BK)
    lc: gl.constexpr = chunk_layout(CH, FP8)
    # C's indices before the loop: computed after it, they leave ptxas serializing the wide MMAs (C7514, "non wgmma
    # instructions reading accumulator registers ... between start and end of the pipeline stage")
    rm = row0 + gl.arange(0, 64, layout=gl.SliceLayout(1, lc))
    rn = col0 + gl.arange(0, CH, layout=gl.SliceLayout(0, lc))
    if WIDE:  # fused_ops/wide_mma: one MMA W wide a k step, the ring read at its shared offsets
        NCH: gl.constexpr = W // CH
        base = wide_mma.smem_base()
        accs = wide_mma.zeros(W, a_bufs.dtype.primitive_bitwidth)
        for kk in range(blocks):
            s = kk % STAGES
            mbarrier.wait(ready.index(s), (kk // STAGES) & 1)
            accs = wide_mma.mma(accs, base + OFF_A + (s * 2 + HALF) * (64 * ROW_BYTES),
                                base + OFF_B + s * (ROWS_B * ROW_BYTES), kk, a_bufs.dtype, ROW_BYTES, 1)
            mbarrier.arrive(empty.index((kk + STAGES - 1) % STAGES), count=1, pred=kk > 0)
        accs = wide_mma.wait(accs)
        mbarrier.arrive(empty.index((blocks + STAGES - 1) % STAGES), count=1)
        for j in gl.static_range(NCH):
            gl.store(c_ptr + rm[:, None] * ldc + rn[None, :] + j * CH, accs[j].to(gl.bfloat16),
                     mask=(rm[:, None] < M) & (rn[None, :] + j * CH < N))
    else:
        R: gl.constexpr = W - P
        lp: gl.constexpr = chunk_layout(P, FP8)
        lr: gl.constexpr = chunk_layout(R, FP8)
        acc = gl.zeros([64, P], gl.float32, lp)
        acc2 = gl.zeros([64, R], gl.float32, lr)
        for kk in range(blocks):
            s = kk % STAGES
            mbarrier.wait(ready.index(s), (kk // STAGES) & 1)
            a = a_bufs.index(s * 2 + HALF)
            b = b_bufs.index(s)
            acc = warpgroup_mma(a, b.slice(0, P).permute((1, 0)), acc, use_acc=kk > 0, is_async=True)
            acc2 = warpgroup_mma(a, b.slice(P, R).permute((1, 0)), acc2, use_acc=kk > 0, is_async=True)
            acc, acc2 = warpgroup_mma_wait(2, deps=(acc, acc2))
            mbarrier.arrive(empty.index((kk + STAGES - 1) % STAGES), count=1, pred=kk > 0)
        acc, acc2 = warpgroup_mma_wait(0, deps=(acc, acc2))
        mbarrier.arrive(empty.index((blocks + STAGES - 1) % STAGES), count=1)
        store_cols(c_ptr, acc, row0, col0, M, N, ldc, lp)
        store_cols(c_ptr, acc2, row0, col0 + P, M, N, ldc, lr)


@gluon.jit
def loader(a_desc, b_desc, b2_desc, a_bufs, b_bufs, ready, empty, K,
           W: gl.constexpr, P: gl.constexpr, BK: gl.constexpr, LOADS: gl.constexpr):
    """The load warp: A's two 64-row boxes and B's P + (W - P) rows of every block of K into the ring (LOADS 0: a
    stage of B a power of two rows deep; 1: W rows in boxes of W - P; 2: W rows, the first P as one box into a view
    of the stage reinterpreted P rows deep)."""
    R: gl.constexpr = W - P
    row0 = gl.program_id(0) * BM
    col0 = gl.program_id(1) * W
    for kk in range(gl.cdiv(K, BK)):
        s = kk % STAGES
        mbarrier.wait(empty.index(s), ((kk // STAGES) & 1) ^ 1)
        bar = ready.index(s)
        mbarrier.expect(bar, 2 * a_desc.block_type.nbytes + (W // R) * b2_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [row0, kk * BK], bar, a_bufs.index(s * 2))
        tma.async_copy_global_to_shared(a_desc, [row0 + 64, kk * BK], bar, a_bufs.index(s * 2 + 1))
        if LOADS == 0:
            b = b_bufs.index(s)
            tma.async_copy_global_to_shared(b_desc, [col0, kk * BK], bar, b.slice(0, P))
            tma.async_copy_global_to_shared(b2_desc, [col0 + P, kk * BK], bar, b.slice(P, R))
        elif LOADS == 1:
            for g in gl.static_range(W // R):
                tma.async_copy_global_to_shared(b2_desc, [col0 + g * R, kk * BK], bar, b_bufs.index(s * (W // R) + g))
        else:
            first = b_bufs.index(s * (W // R))._reinterpret(b_desc.dtype, b_desc.block_type.shape, b_desc.layout)
            tma.async_copy_global_to_shared(b_desc, [col0, kk * BK], bar, first)
            tma.async_copy_global_to_shared(b2_desc, [col0 + P, kk * BK], bar, b_bufs.index(s * (W // R) + P // R))


@gluon.jit
def wide_kernel(a_desc, b_desc, b2_desc, c_ptr, M, N, K, ldc,
                OFF_A: gl.constexpr, OFF_B: gl.constexpr,  # the ring's shared offsets (WIDE; 0 on a first compile)
                W: gl.constexpr, P: gl.constexpr, CH: gl.constexpr,  # the tile's width, Gluon's first MMA, a chunk
                ROWS_B: gl.constexpr,  # B's rows a stage: the power of two from W up (LOADS 0), else W
                FP8: gl.constexpr, WIDE: gl.constexpr, LOADS: gl.constexpr):
    BK: gl.constexpr = a_desc.block_type.shape[1]
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [STAGES * 2, 64, BK], a_desc.layout)
    if LOADS == 0:
        b_bufs = gl.allocate_shared_memory(a_desc.dtype, [STAGES, ROWS_B, BK], a_desc.layout)
    else:  # W rows a stage, as boxes of W - P (Gluon's shared shapes are powers of two but for the first)
        b_bufs = gl.allocate_shared_memory(a_desc.dtype, [STAGES * W // (W - P), W - P, BK], a_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=2)
    gl.warp_specialize([
        (consumer, (0, a_bufs, b_bufs, ready, empty, c_ptr, M, N, K, ldc, OFF_A, OFF_B, W, P, CH, BK, ROWS_B, FP8,
                    WIDE)),
        (consumer, (1, a_bufs, b_bufs, ready, empty, c_ptr, M, N, K, ldc, OFF_A, OFF_B, W, P, CH, BK, ROWS_B, FP8,
                    WIDE)),
        (loader, (a_desc, b_desc, b2_desc, a_bufs, b_bufs, ready, empty, K, W, P, BK, LOADS)),
    ], [4, 1], [232, 40])


def shared_offsets(ttgir):
    """{a_bufs, b_bufs: shared offset} by the compiler's own allocation pass (fused_ops.wide_mma.shared_offsets)."""
    return wide_mma.shared_offsets(ttgir, ("a_bufs", "b_bufs"))


def descriptors(a, b, width):
    """TMA descriptors of A's 64-row boxes and B's two boxes (P and W - P rows), one 128-byte row of K each."""
    p, r, _ = split(width)
    bk = ROW_BYTES.value // a.element_size()
    dt = gl.float8e4nv if a.dtype == torch.float8_e4m3fn else gl.bfloat16

    def box(t, rows):
        return TensorDescriptor.from_tensor(t, [rows, bk], gl.NVMMASharedLayout.get_default_for([rows, bk], dt))

    return box(a, 64), box(b, p), box(b, r)


def constants(width, fp8, wide, loads=0):
    p, _, chunk = split(width)
    rows = width if loads else 1 << (width - 1).bit_length()
    return dict(W=width, P=p, CH=chunk, ROWS_B=rows, FP8=int(fp8), WIDE=int(wide), LOADS=loads)


def launcher(a, b, c, width, wide, loads=0):
    """A callable that computes c = a @ b.T with the probe's kernel, one MMA per k step (wide) or Gluon's two."""
    m, _ = a.shape
    n = b.shape[0]
    grid = (triton.cdiv(m, BM.value), triton.cdiv(n, width))
    args = (*descriptors(a, b, width), c, m, n, a.shape[1], c.stride(0))
    consts = constants(width, a.dtype == torch.float8_e4m3fn, wide, loads)
    offs = {"OFF_A": 0, "OFF_B": 0}
    if wide:
        first = wide_kernel.warmup(*args, **offs, **consts, grid=grid, num_warps=4)
        found = shared_offsets(first.asm["ttgir"])
        offs = {"OFF_A": found["a_bufs"], "OFF_B": found["b_bufs"]}
        again = wide_kernel.warmup(*args, **offs, **consts, grid=grid, num_warps=4)
        if shared_offsets(again.asm["ttgir"]) != found:
            raise RuntimeError("the allocation moved between the two compiles")
    return lambda: wide_kernel[grid](*args, **offs, **consts, num_warps=4)


def operands(m, n, k, fp8, seed):
    """A (M x K) and K-major B (N x K), fresh per shape; FP8: the same values rounded to e4m3."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=g)
    b = torch.randn(n, k, device="cuda", generator=g)
    dt = torch.float8_e4m3fn if fp8 else torch.bfloat16
    return a.to(dt), b.to(dt)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--widths", nargs="+", type=int, default=[96, 144, 160, 72])
    p.add_argument("--dtypes", nargs="+", default=["bf16", "fp8"], choices=["bf16", "fp8"])
    p.add_argument("--shapes", nargs="+", default=["1024x1440x2880", "4096x1440x2880", "1024x2880x7168",
                                                   "129x100x208", "1024x1447x3584"],
                   help="MxNxK (1440 and 2880 are whole tiles of 80, 96, 144 and 160; the last two have edges)")
    p.add_argument("--loads", nargs="+", type=int, default=[0, 1, 2], choices=[0, 1, 2],
                   help="the wide form's B stages: 0 a power of two rows deep; 1 W rows by boxes of W - P; 2 W rows, "
                   "the first P by one box into a reinterpreted view")
    p.add_argument("--calls", type=int, default=3, help="calls in a row before the check (fresh poison each)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    from benchmarks.harness import paired_graph_us, stamp

    rows = []
    seed = 0
    forms = [(0, 0)] + [(1, loads) for loads in args.loads]  # (wide, loads); Gluon's two MMAs first: the baseline
    for dtype in args.dtypes:
        for width in args.widths:
            for shape in args.shapes:
                m, n, k = (int(x) for x in shape.split("x"))
                seed += 1
                a, b = operands(m, n, k, dtype == "fp8", seed)
                want = a.double() @ b.double().T
                calls, errs = [], []
                for wide, loads in forms:
                    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
                    call = launcher(a, b, c, width, wide, loads)
                    for _ in range(args.calls):
                        c.fill_(float("nan"))  # poisoned: a tile left unwritten shows
                        call()
                    torch.cuda.synchronize()
                    errs.append(((c.double() - want).abs().max() / want.abs().max()).item())
                    calls.append(call)
                line = f"{dtype:4s} W={width:3d} {m:>6}x{n}x{k:<6} two MMAs err {errs[0]:.1e}"
                for (_, loads), call, err in list(zip(forms, calls, errs))[1:]:
                    one_us, two_us = paired_graph_us(call, calls[0], rounds=11)
                    rows.append({"dtype": dtype, "width": width, "m": m, "n": n, "k": k, "loads": loads,
                                 "err_two": errs[0], "err_wide": err, "wide_us": one_us, "two_us": two_us,
                                 "speedup": two_us / one_us})
                    line += f" | loads {loads}: {two_us:6.1f} -> {one_us:6.1f} us x{two_us / one_us:.3f} err {err:.1e}"
                print(line, flush=True)
    if args.out:
        import pandas as pd

        os.makedirs(args.out, exist_ok=True)
        df = pd.DataFrame(rows).assign(**stamp(1, "scripts/wide_mma_probe.py"))
        df.to_csv(os.path.join(args.out, "wide_mma.csv"), index=False)
    bad = [r for r in rows if not max(r["err_two"], r["err_wide"]) <= 2e-2]  # NaN fails too
    print(f"{len(rows) - len(bad)} of {len(rows)} correct (both forms within 2e-2 of float64)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

