"""Which wgmma widths can this Triton's Gluon express as one MMA? Compiled here for sm_90a, no GPU needed.

    python scripts/mma_width_probe.py [N ...]

cuBLAS's kernels at most of the GEMMs still below their floors use tiles whose width is not a power of two (96x128,
192x96, 112x128, 144x64, 80x64, 72x64: `results/current/gemm/torch_kernels_9129768/`, `missprof_e91cfa7/`); the
tensor cores take any N that is a multiple of 8 up to 256. The Gluon kernel reaches such widths only as two MMAs per
block of K, a power of two plus REM columns (fused_ops/wgmma.py: `run(rem=...)`), since Gluon's tensors must have
power-of-two shapes. This compiles one 64 x N x 64 bf16 warpgroup MMA per N and prints the PTX instruction it became,
or the compiler's refusal. Exits 0 either way: it reports.
"""

import sys


def compile_width(n):
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


def main():
    import triton

    widths = [int(n) for n in sys.argv[1:]] or [64, 72, 80, 96, 112, 128, 144, 160, 192, 256]
    print(f"triton {triton.__version__}, sm_90a, bf16 64 x N x 64")
    for n in widths:
        print(f"N = {n:3d}  {compile_width(n)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
