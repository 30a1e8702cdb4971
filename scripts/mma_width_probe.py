"""Which wgmma widths can this Triton's Gluon issue as one MMA, on its own and from inline PTX? Compiled here for
sm_90a, no GPU needed.

    python scripts/mma_width_probe.py [N ...]

cuBLAS's kernels at most of the GEMMs still below their floors run tiles with a side of 72-160 that is not a power
of two (`results/current/gemm/gluon_limits/`); the tensor cores take any MMA width that is a multiple of 8 up to
256. The Gluon kernel builds such tiles from two MMAs per block of K, a power of two plus REM columns
(fused_ops/wgmma.py: `run(rem=...)`), each reading A from shared memory again.

1. Gluon's own MMA: one 64 x N x 64 bf16 warpgroup MMA per N; prints the PTX instruction it became, or the
   compiler's refusal.
2. The same MMA 96 wide from inline PTX: a loop over blocks of K, each four `wgmma m64n96k16` issued by one
   `inline_asm_elementwise` whose 48 accumulator registers are three 64 x 32 Gluon tensors (16 a thread each, in the
   order of the MMA's fragment), leaving one block's MMAs in flight as the Gluon kernel does; prints the SASS of the
   loop (HGMMA width, the wait). Compile only: the descriptors' addresses are not checked, so it is not run.
Exits 0 either way: it reports.
"""

import subprocess
import sys
import tempfile


def compile_width(n):
    """Gluon's own 64 x n x 64 bf16 MMA: its PTX instruction, or the compiler's refusal."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.experimental.gluon.language.nvidia.hopper import warpgroup_mma, warpgroup_mma_wait

    @gluon.jit
    def one_mma(out,
                N: gl.constexpr,  # the MMA's width
                ACC: gl.constexpr, SA: gl.constexpr, SB: gl.constexpr):  # its register and shared layouts
        a = gl.allocate_shared_memory(gl.bfloat16, [64, 64], SA)
        b = gl.allocate_shared_memory(gl.bfloat16, [64, N], SB)
        acc = warpgroup_mma(a, b, gl.zeros([64, N], gl.float32, ACC), is_async=True)
        acc = warpgroup_mma_wait(0, deps=(acc, ))
        rm = gl.arange(0, 64, layout=gl.SliceLayout(1, ACC))
        rn = gl.arange(0, N, layout=gl.SliceLayout(0, ACC))
        gl.store(out + rm[:, None] * N + rn[None, :], acc)

    acc = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, n, 16])
    sa = gl.NVMMASharedLayout.get_default_for([64, 64], gl.bfloat16)
    sb = gl.NVMMASharedLayout.get_default_for([64, n], gl.bfloat16)
    sig = {"out": "*fp32", "N": "constexpr", "ACC": "constexpr", "SA": "constexpr", "SB": "constexpr"}
    src = GluonASTSource(fn=one_mma, signature=sig, constexprs={(1,): n, (2,): acc, (3,): sa, (4,): sb}, attrs={})
    try:
        kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    except Exception as e:  # the compiler's own message, whatever its type
        return "refused: " + (str(e).strip().splitlines() or ["?"])[-1]
    ops = {line.split()[0] for line in kernel.asm["ptx"].splitlines() if "wgmma.mma_async" in line}
    return "one MMA: " + ", ".join(sorted(ops))


def asm_96_sass():
    """The SASS of a loop of 64 x 96 x 64 MMAs from inline PTX (accumulators: three 64 x 32 tensors)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.experimental.gluon.language.nvidia.hopper import mbarrier

    @gluon.constexpr_function
    def mma_asm(wait):
        """Four m64n96k16 MMAs (one 64-deep block of K): the accumulators $0-$47 (tied to $48-$95), A's and B's
        shared-memory descriptors $96 and $112 (16 bytes a k16 step into each 128-byte swizzled row: 2 in the
        descriptor's address field), whether to add into the accumulators $128; then at most `wait` groups left in
        flight."""
        regs = ",".join(f"${i}" for i in range(48))
        lines = ["{ .reg .b64 da, db; .reg .pred p;", "setp.ne.b32 p, $128, 0;", "wgmma.fence.sync.aligned;"]
        for k in range(4):
            lines += [f"add.s64 da, $96, {2 * k};", f"add.s64 db, $112, {2 * k};",
                      f"wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {{{regs}}}, da, db, p, 1, 1, 0, 0;"]
        lines += ["wgmma.commit_group.sync.aligned;", f"wgmma.wait_group.sync.aligned {wait};", "}"]
        return "\n".join(lines)

    @gluon.constexpr_function
    def constraints(extra):
        """The accumulators' 48 registers out and tied in, then 16 operands (one pack) of each `extra` argument."""
        extras = [c for c in extra.split(",") if c for _ in range(16)]
        return ",".join(["=f"] * 48 + [str(i) for i in range(48)] + extras)

    @gluon.jit
    def loop_96(out, blocks,
                ACC: gl.constexpr, SA: gl.constexpr, SB: gl.constexpr):  # a 64 x 32 chunk's layout; A's and B's
        _a = gl.allocate_shared_memory(gl.bfloat16, [64, 64], SA)  # the operands' space (the descriptors
        _b = gl.allocate_shared_memory(gl.bfloat16, [128, 64], SB)  # point at its base): B K-major, 96 rows used
        done = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(done, count=1)
        base = gl.inline_asm_elementwise("mov.u32 $0, global_smem;", "=r", [], dtype=gl.int32, is_pure=True, pack=1)
        # K-major, 128-byte swizzle: stride offset 1024 bytes (8 rows of 128), mode 1 at bit 62
        desc = ((base.to(gl.int64) >> 4) & 0x3FFF) | (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)
        da = gl.full([64, 32], 0, gl.int64, ACC) + desc
        db = gl.full([64, 32], 0, gl.int64, ACC) + desc
        c0 = gl.zeros([64, 32], gl.float32, ACC)
        c1 = gl.zeros([64, 32], gl.float32, ACC)
        c2 = gl.zeros([64, 32], gl.float32, ACC)
        for i in range(blocks):
            use = gl.full([64, 32], i, gl.int32, ACC)
            c0, c1, c2 = gl.inline_asm_elementwise(mma_asm(1), constraints("l,l,r"), [c0, c1, c2, da, db, use],
                                                   dtype=(gl.float32, gl.float32, gl.float32), is_pure=False,
                                                   pack=16)
            mbarrier.arrive(done, count=1)  # the previous block's stage released, as the Gluon kernel does
        c0, c1, c2 = gl.inline_asm_elementwise("wgmma.wait_group.sync.aligned 0;", constraints(""), [c0, c1, c2],
                                               dtype=(gl.float32, gl.float32, gl.float32), is_pure=False, pack=16)
        rm = gl.arange(0, 64, layout=gl.SliceLayout(1, ACC))
        rn = gl.arange(0, 32, layout=gl.SliceLayout(0, ACC))
        o = out + rm[:, None] * 96 + rn[None, :]
        gl.store(o, c0)
        gl.store(o + 32, c1)
        gl.store(o + 64, c2)

    acc = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 32, 16])
    sa = gl.NVMMASharedLayout.get_default_for([64, 64], gl.bfloat16)
    sb = gl.NVMMASharedLayout.get_default_for([128, 64], gl.bfloat16)
    sig = {"out": "*fp32", "blocks": "i32", "ACC": "constexpr", "SA": "constexpr", "SB": "constexpr"}
    src = GluonASTSource(fn=loop_96, signature=sig, constexprs={(2,): acc, (3,): sa, (4,): sb}, attrs={})
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(kernel.asm["cubin"])
        f.flush()
        tool = triton.__path__[0] + "/backends/nvidia/bin/cuobjdump"
        sass = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True).stdout
    return [line.split(";")[0].split("*/")[-1].strip() for line in sass.splitlines()
            if "HGMMA" in line or "WARPGROUP" in line]


def main():
    import triton

    widths = [int(n) for n in sys.argv[1:]] or [64, 72, 80, 96, 112, 128, 144, 160, 192, 256]
    print(f"triton {triton.__version__}, sm_90a, bf16 64 x N x 64")
    for n in widths:
        print(f"N = {n:3d}  {compile_width(n)}")
    print("N =  96 from inline PTX, accumulators in three 64 x 32 tensors; the loop's SASS:")
    try:
        for line in asm_96_sass():
            print(f"  {line}")
    except Exception as e:  # the compiler's own message, whatever its type
        print("  does not compile: " + (str(e).strip().splitlines() or ["?"])[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
