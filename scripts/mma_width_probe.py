"""Which wgmma widths can this Triton's Gluon issue as one MMA, on its own and from inline PTX? Compiled here for
sm_90a, no GPU needed.

    python scripts/mma_width_probe.py [N ...]

cuBLAS's kernels at most of the GEMMs still below their floors run tiles with a side of 72-160 that is not a power
of two (`results/current/gemm/gluon_limits/`); the tensor cores take any MMA width that is a multiple of 8 up to
256. The Gluon kernel builds such tiles from two MMAs per block of K, a power of two plus REM columns
(fused_ops/wgmma.py: `run(rem=...)`), each reading A from shared memory again.

1. Gluon's own MMA: one 64 x N x 64 bf16 warpgroup MMA per N; prints the PTX instruction it became, or the
   compiler's refusal.
2. The same widths from inline PTX, bf16 and FP8: scripts/wide_mma_probe.py's kernel, whose consumers issue one
   `wgmma m64nN` a k step from one `inline_asm_elementwise` (N / 2 accumulator registers a thread, held as Gluon
   tensors of 64 x 8-32), one block's MMAs left in flight; prints its MMAs and waits in SASS, and whether ptxas
   serialized them (C7514). Compile only (that script runs it).
Exits 0 either way: it reports.
"""

import os
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


def wide_sass(width, dtype):
    """scripts/wide_mma_probe.py's kernel (one MMA `width` wide a k step from inline PTX) compiled for sm_90a with the
    ring's shared offsets as it runs them: (its MMA instructions and waits in SASS, whether ptxas serialized the
    MMAs: its C7514 note)."""
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import wide_mma_probe as W

    t = torch.empty(256, 256, dtype=torch.float8_e4m3fn if dtype == "fp8" else torch.bfloat16)
    descs = W.descriptors(t, t, width)
    consts = W.constants(width, dtype == "fp8", wide=True)
    sig = dict(zip(("a_desc", "b_desc", "b2_desc"), map(mangle_type, descs)))
    sig.update(c_ptr="*bf16", M="i32", N="i32", K="i32", ldc="i32")
    names = ["OFF_A", "OFF_B", *consts]
    sig.update({name: "constexpr" for name in names})

    def compiled(off_a, off_b):
        values = dict(OFF_A=off_a, OFF_B=off_b, **consts)
        src = GluonASTSource(fn=W.wide_kernel, signature=sig, attrs={},
                             constexprs={(8 + i,): values[name] for i, name in enumerate(names)})
        return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})

    offsets = W.shared_offsets(compiled(0, 0).asm["ttgir"])
    kernel = compiled(offsets["a_bufs"], offsets["b_bufs"])
    tools = triton.__path__[0] + "/backends/nvidia/bin/"
    with tempfile.TemporaryDirectory() as d:
        ptx, cubin = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(ptx, "w") as f:
            f.write(kernel.asm["ptx"])
        notes = subprocess.run([tools + "ptxas", "-arch=sm_90a", "-v", ptx, "-o", cubin], capture_output=True,
                               text=True).stderr
        sass = subprocess.run([tools + "cuobjdump", "-sass", cubin], capture_output=True, text=True).stdout
    mmas = sorted({tok for line in sass.splitlines() for tok in line.split() if "GMMA." in tok})
    waits = sorted({line.split("DEPBAR")[1].split(";")[0].strip() for line in sass.splitlines() if "DEPBAR" in line})
    return mmas, waits, "C7514" in notes


def main():
    import triton

    widths = [int(n) for n in sys.argv[1:]] or [64, 72, 80, 96, 112, 128, 144, 160, 192, 256]
    print(f"triton {triton.__version__}, sm_90a, bf16 64 x N x 64")
    for n in widths:
        print(f"N = {n:3d}  {compile_width(n)}")
    print("From inline PTX (scripts/wide_mma_probe.py's kernel, 128 x N tiles, two consumers): SASS MMAs, waits")
    for dtype in ("bf16", "fp8"):
        for n in (72, 80, 96, 144, 160):
            try:
                mmas, waits, serialized = wide_sass(n, dtype)
                what = f"{', '.join(mmas)}; waits {', '.join(waits)}" + ("; SERIALIZED by ptxas" if serialized else "")
            except Exception as e:  # the compiler's own message, whatever its type
                what = "does not compile: " + (str(e).strip().splitlines() or ["?"])[-1]
            print(f"{dtype:4s} N = {n:3d}  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
