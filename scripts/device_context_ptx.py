"""Zero cost of iris.DeviceContext, checked without a GPU: compile one RMA kernel written with the functional API
and with the device context for sm_90 (Triton ships ptxas and nvdisasm), and compare their PTX and SASS
instruction mixes. Also compiles the
context's tile collectives, so compiled-mode-only errors show up here.

    python scripts/device_context_ptx.py    # prints a table; exit status 1 if the constexpr forms' SASS global
                                            # memory instructions differ or the context adds > 2
"""

import collections
import os
import re
import sys

os.environ["IRIS_COMPILE_ONLY"] = "1"
os.environ.pop("TRITON_INTERPRET", None)
sys.path.insert(0, os.getcwd())

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import iris

TARGET = GPUTarget("cuda", 90, 32)


@triton.jit
def functional_kernel(x, y, counter, cur_rank, world_size, heap_bases, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    peer = (cur_rank + 1) % world_size
    v = iris.load(x + offs, cur_rank, peer, heap_bases)
    iris.store(y + offs, v * 2, cur_rank, peer, heap_bases)
    iris.atomic_add(counter, 1, cur_rank, peer, heap_bases, sem="release", scope="sys")


@triton.jit
def context_kernel(x, y, counter, context, BLOCK: tl.constexpr):
    dctx = iris.DeviceContext.initialize(context)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    peer = (dctx.rank + 1) % dctx.world
    v = dctx.load(x + offs, peer)
    dctx.store(y + offs, v * 2, peer)
    dctx.atomic_add(counter, 1, peer, sem="release", scope="sys")


@triton.jit
def context_constexpr_kernel(x, y, counter, context, rank: tl.constexpr, world: tl.constexpr, BLOCK: tl.constexpr):
    dctx = iris.DeviceContext.initialize(context, rank, world)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    peer = (dctx.rank + 1) % dctx.world
    v = dctx.load(x + offs, peer)
    dctx.store(y + offs, v * 2, peer)
    dctx.atomic_add(counter, 1, peer, sem="release", scope="sys")


@triton.jit
def functional_constexpr_kernel(x, y, counter, heap_bases, rank: tl.constexpr, world: tl.constexpr,
                                BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    peer = (rank + 1) % world
    v = iris.load(x + offs, rank, peer, heap_bases)
    iris.store(y + offs, v * 2, rank, peer, heap_bases)
    iris.atomic_add(counter, 1, rank, peer, heap_bases, sem="release", scope="sys")


@triton.jit
def collectives_kernel(x, out, context, BLOCK: tl.constexpr):
    dctx = iris.DeviceContext.initialize(context)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    tl.store(out + offs, dctx.all_reduce(v))
    tl.store(out + offs, dctx.all_reduce(v, variant="two_shot"))
    tl.store(out + offs, dctx.broadcast(v, 0))
    tl.store(out + offs, dctx.reduce(v, 0, op="max"))
    tl.store(out + offs, dctx.sendrecv(v, (dctx.rank + 1) % dctx.world, (dctx.rank + dctx.world - 1) % dctx.world))
    dctx.barrier()
    dctx.all_gather(v, out)
    dctx.reduce_scatter(v, out)
    dctx.signal(out.to(tl.pointer_type(tl.int32)), 1, 0)
    dctx.wait(out.to(tl.pointer_type(tl.int32)), 1)
    dctx.get(x + offs, out + offs, 1, mask=offs < 100, other=0.0, load_cache_modifier=".cg")
    dctx.put(x + offs, out + offs, 1, store_cache_modifier=".cs")
    dctx.copy(x + offs, out + offs, 0, 1, hint=16)
    dctx.atomic_xchg(out, 1.0, 1)
    dctx.atomic_cas(out.to(tl.pointer_type(tl.int32)), 0, 1, 1, sem="acq_rel", scope="sys")


def compile_(fn, sig, constexprs):
    names = fn.arg_names
    sig = {**sig, **{k: "constexpr" for k in constexprs}}
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a, t in sig.items() if str(t).startswith("*")}
    src = ASTSource(fn=fn, signature=sig, constexprs={(names.index(k),): v for k, v in constexprs.items()},
                    attrs=attrs)
    return triton.compile(src, target=TARGET, options={"num_warps": 4})


def mix(ptx):
    """Instruction opcodes of the kernel body (no directives, labels or parameter declarations)."""
    ops = collections.Counter()
    for line in ptx.splitlines():
        line = line.strip()
        if not line or line.startswith((".", "//", "{", "}", "$", ")")) or line.endswith(":"):
            continue
        op = re.split(r"[\s;]", line.lstrip("@!%p0123456789 "), maxsplit=1)[0]
        ops[op] += 1
    return ops


def sass_mix(kernel):
    """SASS opcodes of the compiled cubin (nvdisasm, shipped with Triton)."""
    import subprocess
    import tempfile
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "nvdisasm")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(kernel.asm["cubin"])
        f.flush()
        text = subprocess.run([tool, "-c", f.name], capture_output=True, text=True, check=True).stdout
    ops = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m and m.group(1) not in ("NOP",):
            ops[m.group(1)] += 1
    return ops


def main():
    B = {"BLOCK": 1024}
    p = {"x": "*fp32", "y": "*fp32", "counter": "*i32"}
    kernels = {
        "functional (rank, world as args)": compile_(functional_kernel, {**p, "cur_rank": "i32", "world_size": "i32",
                                                                         "heap_bases": "*i64"}, B),
        "DeviceContext (rank, world loaded)": compile_(context_kernel, {**p, "context": "*i64"}, B),
        "functional (rank, world constexpr)": compile_(functional_constexpr_kernel, {**p, "heap_bases": "*i64"},
                                                       {"rank": 0, "world": 2, **B}),
        "DeviceContext (rank, world constexpr)": compile_(context_constexpr_kernel, {**p, "context": "*i64"},
                                                          {"rank": 0, "world": 2, **B}),
    }
    mixes = {k: mix(v.asm["ptx"]) for k, v in kernels.items()}
    print(f"{'kernel':40s} {'PTX instr':>9s} {'ld.global':>9s} {'st.global':>9s} {'atom':>5s}")
    for k, m in mixes.items():
        ld = sum(v for o, v in m.items() if o.startswith("ld.global"))
        st = sum(v for o, v in m.items() if o.startswith("st.global"))
        at = sum(v for o, v in m.items() if o.startswith("atom"))
        print(f"{k:40s} {sum(m.values()):9d} {ld:9d} {st:9d} {at:5d}")
    sass = {k: sass_mix(v) for k, v in kernels.items()}
    print(f"{'kernel':40s} {'SASS instr':>10s} {'LDG':>4s} {'STG':>4s} {'ATOM/RED':>8s}")
    for k, m in sass.items():
        ldg = sum(v for o, v in m.items() if o.startswith("LDG"))
        stg = sum(v for o, v in m.items() if o.startswith("STG"))
        atom = sum(v for o, v in m.items() if o.startswith(("ATOM", "RED")))
        print(f"{k:40s} {sum(m.values()):10d} {ldg:4d} {stg:4d} {atom:8d}")
    names = list(mixes)
    for a, b in ((names[0], names[1]), (names[2], names[3])):
        print(f"SASS difference {a} vs {b}: {dict(sass[b] - sass[a]) or 'none'} extra / "
              f"{dict(sass[a] - sass[b]) or 'none'} fewer in the context form")
    for a, b in ((names[0], names[1]), (names[2], names[3])):
        print(f"difference {a} vs {b}: {dict(mixes[b] - mixes[a]) or 'none'} extra / "
              f"{dict(mixes[a] - mixes[b]) or 'none'} fewer in the context form")
    a, b = sass[names[2]], sass[names[3]]
    memory = [o for o in set(a) | set(b) if o.startswith(("LDG", "STG", "ATOM", "RED"))]
    same = all(a[o] == b[o] for o in memory) and sum(b.values()) - sum(a.values()) <= 2
    print(f"constexpr forms, SASS: global memory instructions identical and at most 2 extra instructions: {same}")
    coll = compile_(collectives_kernel, {"x": "*fp32", "out": "*fp32", "context": "*i64"}, {"BLOCK": 256})
    print(f"tile collectives through the context compiled: {sum(mix(coll.asm['ptx']).values())} PTX instructions")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
