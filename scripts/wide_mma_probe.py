"""One 64 x 96 MMA a k16 step from inline PTX against Gluon's two (64 + 32 columns), in the same small kernel: are
its results right, and how much faster is it? The Gluon kernel's 96-wide tiles (fused_ops/wgmma.py, `rem=32`) run
two MMAs per block of K, each reading the warpgroup's rows of A from shared memory again; Gluon refuses an MMA 96
wide (`scripts/mma_width_probe.py`). This builds the single MMA from inline PTX before the kernel takes it.

    IRIS_BACKEND=cuda python scripts/wide_mma_probe.py [--shapes MxNxK ...] [--out DIR]

The kernel: one program per 128 x 96 tile of C = A @ B^T (B K-major, N x K, as FP8 and nn.Linear store it), two
consumer warpgroups of 64 rows each in one partition, a ring of STAGES blocks of K filled by TMA, each block's MMAs
left in flight while the next block's issue (as wgmma_ws_kernel does). WIDE=1: four `wgmma m64n96k16` a block from
one `inline_asm_elementwise`, whose 48 accumulator registers a thread are three 64 x 32 Gluon tensors; the shared
memory descriptors are built from the ring's shared offsets, read from the compiler's allocation pass on a first
compile (the offsets depend on the allocations alone, so the second compile, which carries them as constexprs, keeps
them: checked). WIDE=0: Gluon's warpgroup_mma, 64 and then 32 columns. Both are checked against torch in float64,
then timed in turns in a CUDA graph. Needs a Hopper GPU; prints a table and writes DIR/wide_mma.csv.
"""

import argparse
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import triton  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    mbarrier, tma, warpgroup_mma, warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor  # noqa: E402

BM = gl.constexpr(128)  # a tile: 128 rows (two consumers of 64) by BN + REM = 96 columns
BN = gl.constexpr(64)
REM = gl.constexpr(32)
BK = gl.constexpr(64)  # 64-deep blocks of K
STAGES = gl.constexpr(4)
ROWS_B = gl.constexpr(128)  # B's rows a stage: 96 used, the allocation a power of two


@gluon.constexpr_function
def wide_asm(wait):
    """Four m64n96k16 MMAs (one block of K): accumulators $0-$47 (tied to $48-$95), A's and B's descriptors $96 and
    $112 (+2 a k16 step: 32 bytes in the descriptor's address field, which counts 16-byte units), whether to add into
    the accumulators $128; then at most `wait` groups in flight."""
    regs = ",".join(f"${i}" for i in range(48))
    lines = ["{ .reg .b64 da, db; .reg .pred p;", "setp.ne.b32 p, $128, 0;", "wgmma.fence.sync.aligned;"]
    for k in range(BK.value // 16):
        lines += [f"add.s64 da, $96, {2 * k};", f"add.s64 db, $112, {2 * k};",
                  f"wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {{{regs}}}, da, db, p, 1, 1, 0, 0;"]
    lines += ["wgmma.commit_group.sync.aligned;", f"wgmma.wait_group.sync.aligned {wait};", "}"]
    return "\n".join(lines)


@gluon.constexpr_function
def tied(extra):
    """Constraints: 48 accumulator registers out and tied in, then one pack (16) of each `extra` argument."""
    return ",".join(["=f"] * 48 + [str(i) for i in range(48)] + [c for c in extra.split(",") if c for _ in range(16)])


@gluon.jit
def k_major_desc(addr):
    """A wgmma shared-memory descriptor of K-major rows of 128 bytes, 128-byte swizzled: 8-row groups 1024 bytes
    apart, swizzle mode 1 (bits 62-63)."""
    return ((addr.to(gl.int64) >> 4) & 0x3FFF) | (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)


@gluon.jit
def consumer(HALF: gl.constexpr, a_bufs, b_bufs, ready, empty, c_ptr, M, N, K, ldc,
             OFF_A: gl.constexpr, OFF_B: gl.constexpr,  # the ring's shared offsets (WIDE)
             WIDE: gl.constexpr):
    """One 64-row warpgroup of a tile: every block of K, then its 64 x 96 of C."""
    acc_l: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 32, 16])
    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    blocks = gl.cdiv(K, BK)
    rm = pid_m * BM + HALF * 64 + gl.arange(0, 64, layout=gl.SliceLayout(1, acc_l))
    rn = pid_n * (BN + REM) + gl.arange(0, 32, layout=gl.SliceLayout(0, acc_l))
    if WIDE:
        base = gl.inline_asm_elementwise("mov.u32 $0, global_smem;", "=r", [], dtype=gl.int32, is_pure=True, pack=1)
        c0 = gl.zeros([64, 32], gl.float32, acc_l)
        c1 = gl.zeros([64, 32], gl.float32, acc_l)
        c2 = gl.zeros([64, 32], gl.float32, acc_l)
        for kk in range(blocks):
            s = kk % STAGES
            mbarrier.wait(ready.index(s), (kk // STAGES) & 1)
            a_addr = base + OFF_A + (s * 2 + HALF) * (64 * BK * 2)
            b_addr = base + OFF_B + s * (ROWS_B * BK * 2)
            da = gl.full([64, 32], 0, gl.int64, acc_l) + k_major_desc(a_addr)
            db = gl.full([64, 32], 0, gl.int64, acc_l) + k_major_desc(b_addr)
            use = gl.full([64, 32], kk, gl.int32, acc_l)
            c0, c1, c2 = gl.inline_asm_elementwise(wide_asm(1), tied("l,l,r"), [c0, c1, c2, da, db, use],
                                                   dtype=(gl.float32, gl.float32, gl.float32), is_pure=False,
                                                   pack=16)
            mbarrier.arrive(empty.index((kk + STAGES - 1) % STAGES), count=1, pred=kk > 0)
        c0, c1, c2 = gl.inline_asm_elementwise("wgmma.wait_group.sync.aligned 0;", tied(""), [c0, c1, c2],
                                               dtype=(gl.float32, gl.float32, gl.float32), is_pure=False, pack=16)
        mbarrier.arrive(empty.index((blocks + STAGES - 1) % STAGES), count=1)
        o = c_ptr + rm[:, None] * ldc + rn[None, :]
        gl.store(o, c0.to(gl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))
        gl.store(o + 32, c1.to(gl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] + 32 < N))
        gl.store(o + 64, c2.to(gl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] + 64 < N))
    else:
        l64: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])
        acc = gl.zeros([64, 64], gl.float32, l64)
        acc2 = gl.zeros([64, 32], gl.float32, acc_l)
        for kk in range(blocks):
            s = kk % STAGES
            mbarrier.wait(ready.index(s), (kk // STAGES) & 1)
            a = a_bufs.index(s * 2 + HALF)
            b = b_bufs.index(s)
            acc = warpgroup_mma(a, b.slice(0, BN).permute((1, 0)), acc, use_acc=kk > 0, is_async=True)
            acc2 = warpgroup_mma(a, b.slice(BN, REM).permute((1, 0)), acc2, use_acc=kk > 0, is_async=True)
            acc, acc2 = warpgroup_mma_wait(2, deps=(acc, acc2))
            mbarrier.arrive(empty.index((kk + STAGES - 1) % STAGES), count=1, pred=kk > 0)
        acc, acc2 = warpgroup_mma_wait(0, deps=(acc, acc2))
        mbarrier.arrive(empty.index((blocks + STAGES - 1) % STAGES), count=1)
        rm64 = pid_m * BM + HALF * 64 + gl.arange(0, 64, layout=gl.SliceLayout(1, l64))
        rn64 = pid_n * (BN + REM) + gl.arange(0, 64, layout=gl.SliceLayout(0, l64))
        gl.store(c_ptr + rm64[:, None] * ldc + rn64[None, :], acc.to(gl.bfloat16),
                 mask=(rm64[:, None] < M) & (rn64[None, :] < N))
        o = c_ptr + rm[:, None] * ldc + rn[None, :] + BN
        gl.store(o, acc2.to(gl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] + BN < N))


@gluon.jit
def loader(a_desc, b_desc, b2_desc, a_bufs, b_bufs, ready, empty, K):
    """The load warp: A's two 64-row boxes and B's 64 + 32 rows of every block of K into the ring."""
    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    for kk in range(gl.cdiv(K, BK)):
        s = kk % STAGES
        mbarrier.wait(empty.index(s), ((kk // STAGES) & 1) ^ 1)
        bar = ready.index(s)
        mbarrier.expect(bar, 2 * a_desc.block_type.nbytes + b_desc.block_type.nbytes + b2_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [pid_m * BM, kk * BK], bar, a_bufs.index(s * 2))
        tma.async_copy_global_to_shared(a_desc, [pid_m * BM + 64, kk * BK], bar, a_bufs.index(s * 2 + 1))
        b = b_bufs.index(s)
        tma.async_copy_global_to_shared(b_desc, [pid_n * (BN + REM), kk * BK], bar, b.slice(0, BN))
        tma.async_copy_global_to_shared(b2_desc, [pid_n * (BN + REM) + BN, kk * BK], bar, b.slice(BN, REM))


@gluon.jit
def wide_kernel(a_desc, b_desc, b2_desc, c_ptr, M, N, K, ldc,
                OFF_A: gl.constexpr, OFF_B: gl.constexpr,  # the ring's shared offsets (WIDE; 0 on a first compile)
                WIDE: gl.constexpr):
    a_bufs = gl.allocate_shared_memory(gl.bfloat16, [STAGES * 2, 64, BK], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(gl.bfloat16, [STAGES, ROWS_B, BK], a_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=2)
    gl.warp_specialize([
        (consumer, (0, a_bufs, b_bufs, ready, empty, c_ptr, M, N, K, ldc, OFF_A, OFF_B, WIDE)),
        (consumer, (1, a_bufs, b_bufs, ready, empty, c_ptr, M, N, K, ldc, OFF_A, OFF_B, WIDE)),
        (loader, (a_desc, b_desc, b2_desc, a_bufs, b_bufs, ready, empty, K)),
    ], [4, 1], [232, 40])


def shared_offsets(ttgir, names=("a_bufs", "b_bufs"), capability=90):
    """{allocation: shared offset} by the compiler's own allocation pass on a compiled kernel's TTGIR."""
    from triton._C.libtriton import ir, nvidia, passes
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend

    ctx = ir.context()
    ir.load_dialects(ctx)
    CUDABackend(GPUTarget("cuda", capability, 32)).load_dialects(ctx)
    with tempfile.NamedTemporaryFile("w", suffix=".ttgir") as f:
        f.write(ttgir)
        f.flush()
        mod = ir.parse_mlir_module(f.name, ctx)
    mod.context = ctx
    pm = ir.pass_manager(ctx)
    passes.ttgpuir.add_combine_tensor_select_and_if(pm)
    passes.ttgpuir.add_allocate_warp_groups(pm)
    passes.convert.add_scf_to_cf(pm)
    passes.gluon.add_inliner(pm)
    nvidia.passes.ttgpuir.add_allocate_shared_memory_nv(pm, capability, 80)
    pm.run(mod, "shared_offsets")
    found = dict(re.findall(r"%(\w+) = ttg.local_alloc \{allocation.offset = (\d+)", str(mod)))
    missing = [n for n in names if n not in found]
    if missing:
        raise RuntimeError(f"no allocation offset for {missing} in the TTGIR (found {sorted(found)})")
    return {n: int(found[n]) for n in names}


def operands(m, n, k, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda", generator=g).to(torch.bfloat16)  # K-major B: C = A @ B^T
    return a, b


def launcher(a, b, c, wide):
    """A callable that computes c = a @ b.T with the probe's kernel (WIDE or Gluon's two MMAs)."""
    m, k = a.shape
    n = b.shape[0]
    lay = gl.NVMMASharedLayout.get_default_for([64, BK], gl.bfloat16)
    ad = TensorDescriptor.from_tensor(a, [64, BK], lay)
    bd = TensorDescriptor.from_tensor(b, [BN, BK], lay)
    b2d = TensorDescriptor.from_tensor(b, [REM, BK], gl.NVMMASharedLayout.get_default_for([REM, BK], gl.bfloat16))
    grid = (triton.cdiv(m, BM), triton.cdiv(n, BN + REM))
    args = (ad, bd, b2d, c, m, n, k, c.stride(0))
    offs = {"OFF_A": 0, "OFF_B": 0}
    if wide:
        first = wide_kernel.warmup(*args, **offs, WIDE=1, grid=grid, num_warps=4)
        found = shared_offsets(first.asm["ttgir"])
        offs = {"OFF_A": found["a_bufs"], "OFF_B": found["b_bufs"]}
        again = wide_kernel.warmup(*args, **offs, WIDE=1, grid=grid, num_warps=4)
        if shared_offsets(again.asm["ttgir"]) != found:
            raise RuntimeError("the allocation moved between the two compiles")
    return lambda: wide_kernel[grid](*args, **offs, WIDE=int(wide), num_warps=4)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", nargs="+", default=["1024x1440x2880", "1024x2880x2880", "4096x1440x2880",
                                                   "128x96x64", "129x100x200"])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    from benchmarks.harness import paired_graph_us, stamp

    rows = []
    for i, shape in enumerate(args.shapes):
        m, n, k = (int(x) for x in shape.split("x"))
        a, b = operands(m, n, k, seed=i)
        want = (a.double() @ b.double().T)
        row = {"m": m, "n": n, "k": k}
        calls = {}
        for wide in (0, 1):
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)  # poisoned
            call = launcher(a, b, c, wide)
            for _ in range(3):  # many calls in a row: the ring's phases carry over nothing between launches
                c.fill_(float("nan"))
                call()
            torch.cuda.synchronize()
            err = ((c.double() - want).abs().max() / want.abs().max()).item()
            row[f"err_{'wide' if wide else 'two'}"] = err
            calls[wide] = call
        ours, base = paired_graph_us(calls[1], calls[0], rounds=11)
        row.update(wide_us=ours, two_us=base, speedup=base / ours)
        rows.append(row)
        print(f"{shape:>16}  two MMAs {base:8.1f} us  one wide {ours:8.1f} us  x{base / ours:.3f}  "
              f"err {row['err_two']:.1e} / {row['err_wide']:.1e}")
    if args.out:
        import pandas as pd

        os.makedirs(args.out, exist_ok=True)
        df = pd.DataFrame(rows).assign(**stamp(1, "scripts/wide_mma_probe.py"))
        df.to_csv(os.path.join(args.out, "wide_mma.csv"), index=False)
    bad = [r for r in rows if max(r["err_two"], r["err_wide"]) > 2e-2 or r["err_wide"] != r["err_wide"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
