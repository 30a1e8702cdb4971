"""Does this Triton's Gluon emit TMA multicast on Hopper? Compiled here for sm_90a, no GPU needed.

    python scripts/tma_multicast_probe.py

cuBLAS runs the GEMM shapes still below their floors in clusters of 2-4 CTAs that load the operand they share once,
by TMA multicast (docs/performance.md, "What limits the rest"). Triton 3.6's Gluon has no multicast operand on its
Hopper TMA copy; there the one way left is a cluster (num_ctas=2) with a CGA layout in which both CTAs hold the same
box. This compiles a TMA load into shared memory four ways and prints the PTX copy instruction of each:
- one CTA (the baseline);
- a cluster of 2 with the box split between the CTAs (each loads its half: the coordinates differ per CTA);
- a cluster of 2 with the box broadcast to both (multicast would show `.multicast::cluster` and a CTA mask);
- the same with the copy's own `multicast=True`, where this Triton's Gluon has that operand (Triton 3.7 on).
Each case runs in its own process: a layout the compiler rejects aborts it in LLVM. Exits 0 either way: it reports.
"""

import subprocess
import sys

CASES = {"one CTA": (1, []), "cluster of 2, box split": (2, [[1, 0]]), "cluster of 2, box broadcast": (2, [[0, 0]]),
         "cluster of 2, multicast=True": (2, [[0, 0]], True)}
BM, BK = 128, 64


def has_multicast_operand():
    import inspect

    from triton.experimental.gluon.language.nvidia.hopper import tma
    return "multicast" in inspect.signature(tma.async_copy_global_to_shared).parameters


def compile_case(num_ctas, cga, multicast=False):
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    from triton.runtime.jit import mangle_type

    @gluon.jit
    def load_box(a_desc, out,
                 BM: gl.constexpr, BK: gl.constexpr,  # the box
                 SMEM: gl.constexpr, REG: gl.constexpr,  # its shared and register layouts
                 BAR: gl.constexpr, CTAS: gl.constexpr,  # the mbarrier's layout: one barrier per CTA
                 MULTICAST: gl.constexpr):  # the copy's own multicast operand (Triton 3.7 on)
        smem = gl.allocate_shared_memory(gl.bfloat16, [BM, BK], SMEM)
        bar = gl.allocate_shared_memory(gl.int64, [CTAS], BAR)
        mbarrier.init(bar, count=1)
        mbarrier.expect(bar, a_desc.block_type.nbytes)
        if MULTICAST:
            tma.async_copy_global_to_shared(a_desc, [0, 0], bar, smem, multicast=True)
        else:
            tma.async_copy_global_to_shared(a_desc, [0, 0], bar, smem)
        mbarrier.wait(bar, 0)
        rm = gl.arange(0, BM, layout=gl.SliceLayout(1, REG))
        rk = gl.arange(0, BK, layout=gl.SliceLayout(0, REG))
        gl.store(out + rm[:, None] * BK + rk[None, :], smem.load(REG))

    smem = gl.NVMMASharedLayout(128, 16, 2, cga_layout=cga)
    reg = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0], cga_layout=cga)
    desc = TensorDescriptor.from_tensor(torch.empty(2 * BM, BK, dtype=torch.bfloat16), [BM, BK], smem)
    sig = {"a_desc": mangle_type(desc), "out": "*bf16", "BM": "constexpr", "BK": "constexpr", "SMEM": "constexpr",
           "REG": "constexpr", "BAR": "constexpr", "CTAS": "constexpr", "MULTICAST": "constexpr"}
    if not hasattr(mbarrier.MBarrierLayout, "multicta"):  # Triton 3.6: one barrier, whatever the CTAs
        bars, bar = 1, mbarrier.MBarrierLayout()
    else:  # Triton 3.7 on: one per CTA
        bars, bar = num_ctas, mbarrier.MBarrierLayout(cga_layout=[[1 << i] for i in range(num_ctas.bit_length() - 1)])
    src = GluonASTSource(fn=load_box, signature=sig, constexprs={(2,): BM, (3,): BK, (4,): smem, (5,): reg,
                                                                 (6,): bar, (7,): bars, (8,): multicast}, attrs={})
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_ctas": num_ctas})
    return [line.strip() for line in kernel.asm["ptx"].splitlines() if "cp.async.bulk.tensor" in line]


def main():
    if len(sys.argv) == 2:  # one case, in its own process
        for line in compile_case(*CASES[sys.argv[1]]):
            print(line)
        return 0
    import triton

    print(f"triton {triton.__version__}, sm_90a")
    for name in CASES:
        if len(CASES[name]) > 2 and not has_multicast_operand():
            print(f"{name:28s} multicast: no   this Triton's Gluon TMA copy has no multicast operand")
            continue
        run = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True)
        lines = run.stdout.strip().splitlines() if run.returncode == 0 else []
        what = "; ".join(lines) if lines else f"does not compile: {(run.stderr.strip().splitlines() or ['?'])[0]}"
        multicast = any(".multicast::cluster" in line for line in lines)
        print(f"{name:28s} multicast: {'yes' if multicast else 'no '}  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
