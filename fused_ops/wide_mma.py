"""One warpgroup MMA per k step on tiles whose width is no power of two (72-248 columns), from inline PTX.

Why: Triton's Gluon refuses MMA shapes that are not powers of two, so fused_ops/wgmma.py's tiles BLOCK_N + REM wide
(`rem`) would issue two MMAs a k step (N = BLOCK_N, then N = REM), each reading the warpgroup's 64 rows of A from
shared memory again. cuBLAS runs tiles 96, 144 or 160 wide at many of the GEMMs where the Gluon kernel trails it
(results/current/gemm/gluon_limits/). Here one `wgmma.mma_async m64nW` reads A once; it measured 3-13% faster than the
two MMAs in the same kernel at 1024-4096 rows (scripts/wide_mma_probe.py, `wide_mma_h100_*.csv` there).

How:
- The accumulators of a 64 x W tile are W / 2 fp32 registers a thread, held as W / CH Gluon tensors of 64 x CH (CH:
  the largest power of two up to 32 dividing W) in the MMA's own layout, so that one `inline_asm_elementwise` with
  `pack = CH / 2` sees every register of the fragment in order and ties them in and out.
- The MMA's shared-memory descriptors come from the ring's byte offsets. Gluon cannot pass a shared-memory address
  into inline assembly, so `offsets()` compiles the kernel once, runs the compiler's own allocation pass on its
  TTGIR for the allocations' offsets, and the kernel takes them as constexprs on the second compile (which must
  place them the same: checked). Two compiles per configuration, cached; a failure leaves the two-MMA form.
- B's stages hold exactly W rows (one K-major row of 128 bytes or less per column of B): Gluon's shared shapes are
  powers of two, so a stage is W / REM boxes of REM rows, its first BLOCK_N rows one TMA box into a reinterpreted
  view.
- Scope: A and B K-major (A row-major, B column-major: nn.Linear's weights, FP8's only form), blocks of K one swizzle
  span deep (32, 64 or 128 bytes), W up to 256, no `turns`, FP8 precise per block or none (not in pairs).
"""

import re
import tempfile
import warnings

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    _GLUON = True
except ImportError:
    _GLUON = False

K_STEP_BYTES = 32  # one MMA's depth in bytes of a row: k16 bf16/fp16, k32 FP8
SWIZZLE_MODES = {128: 1, 64: 2, 32: 3}  # swizzle span in bytes -> the descriptor's layout type (bits 62-63)

if _GLUON:
    @gluon.constexpr_function
    def chunk(width):
        """The accumulator chunk's width: the largest power of two up to 32 dividing `width`."""
        return min(32, width & -width)

    @gluon.constexpr_function
    def mma_asm(width, row_bytes, dtype, wait, fresh):
        """PTX of one block of K: row_bytes / 32 MMAs m64n<width> (k16 16-bit or k32 FP8), each 32 bytes further
        along A's and B's swizzled rows (2 in the descriptors' 16-byte units); then at most `wait` groups left in
        flight.
        Operands: the width / 2 accumulators $0.., tied to $n.. (n = width / 2) unless `fresh` (a block's own sum:
        nothing read, so nothing to zero first), A's and B's descriptors next, then whether the block's first step
        adds into the accumulators (the others always add), a pack of registers each (pack: one chunk's)."""
        n = width // 2
        pack = chunk(width) // 2
        first = n if fresh else 2 * n  # the first operand past the accumulators
        dtype = dtype.name
        kind = {"fp8e4nv": "k32.f32.e4m3.e4m3", "bf16": "k16.f32.bf16.bf16", "fp16": "k16.f32.f16.f16"}[dtype]
        tail = "1, 1" if dtype == "fp8e4nv" else "1, 1, 0, 0"  # scales (16-bit: and both operands K-major)
        regs = ",".join(f"${i}" for i in range(n))
        use = f"${first + 2 * pack}"
        lines = ["{ .reg .b64 da, db; .reg .pred p, t;", f"setp.ne.b32 p, {use}, 0;", f"setp.eq.b32 t, {use}, {use};",
                 "wgmma.fence.sync.aligned;"]
        for k in range(row_bytes // K_STEP_BYTES):
            scale_d = "t" if k else "p"
            lines += [f"add.s64 da, ${first}, {2 * k};", f"add.s64 db, ${first + pack}, {2 * k};",
                      f"wgmma.mma_async.sync.aligned.m64n{width}{kind} {{{regs}}}, da, db, {scale_d}, {tail};"]
        lines += ["wgmma.commit_group.sync.aligned;", f"wgmma.wait_group.sync.aligned {wait};", "}"]
        return "\n".join(lines)

    @gluon.constexpr_function
    def tied(width, extra, fresh=False):
        """Constraints: the width / 2 accumulators out and (unless fresh) tied in, then one pack of registers per
        `extra` one."""
        n = width // 2
        pack = chunk(width) // 2
        per = [c for c in extra.split(",") if c for _ in range(pack)]
        return ",".join(["=f"] * n + ([] if fresh else [str(i) for i in range(n)]) + per)

    @gluon.constexpr_function
    def f32s(count):
        return [gl.float32] * count

    @gluon.constexpr_function
    def chunk_layout(width, bits):
        """The accumulator layout of one 64 x width chunk over one warpgroup (the MMA's fragment, first columns)."""
        return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, width, 256 // bits])

    @gluon.jit
    def zeros(W: gl.constexpr, bits: gl.constexpr):
        """A 64 x W accumulator of zeros: a tuple of W / CH chunks of 64 x CH."""
        CH: gl.constexpr = chunk(W)
        layout: gl.constexpr = chunk_layout(CH, bits)
        z = gl.zeros([64, CH], gl.float32, layout)
        acc = (z, )
        for _ in gl.static_range(W // CH - 1):
            acc = acc + (z, )
        return acc

    @gluon.jit
    def smem_base():
        """The shared window's address of the kernel's shared memory (the allocation offsets are from it)."""
        return gl.inline_asm_elementwise("mov.u32 $0, global_smem;", "=r", [], dtype=gl.int32, is_pure=True, pack=1)

    @gluon.jit
    def descriptor(addr, ROW_BYTES: gl.constexpr):
        """A wgmma shared-memory descriptor of K-major rows ROW_BYTES long, swizzled over that span: 8-row groups
        8 x ROW_BYTES apart."""
        MODE: gl.constexpr = 1 if ROW_BYTES == 128 else 2 if ROW_BYTES == 64 else 3
        return ((addr.to(gl.int64) >> 4) & 0x3FFF) | (1 << 16) | (((8 * ROW_BYTES) >> 4) << 32) | (MODE << 62)

    @gluon.jit
    def operands(like, a_addr, b_addr, use, ROW_BYTES: gl.constexpr):
        """The MMA's inputs past its accumulators, each in the chunks' layout (inline assembly takes tensors only):
        A's and B's descriptors and the first step's add-or-overwrite flag."""
        CH: gl.constexpr = like[0].shape[1]
        lc: gl.constexpr = like[0].type.layout
        da = gl.full([64, CH], 0, gl.int64, lc) + descriptor(a_addr, ROW_BYTES)
        db = gl.full([64, CH], 0, gl.int64, lc) + descriptor(b_addr, ROW_BYTES)
        return da, db, gl.full([64, CH], use, gl.int32, lc)

    @gluon.jit
    def mma(acc, a_addr, b_addr, use, DTYPE: gl.constexpr, ROW_BYTES: gl.constexpr, WAIT: gl.constexpr):
        """acc (+)= A (64 x ROW_BYTES of K at shared address a_addr) @ B^T (W rows at b_addr), one block of K of
        operands of DTYPE, with at most WAIT groups of MMAs left in flight (use: whether the block adds into acc, else
        overwrites it). A warpgroup's collective: every thread of it calls this with the same values."""
        W: gl.constexpr = len(acc) * acc[0].shape[1]
        return gl.inline_asm_elementwise(mma_asm(W, ROW_BYTES, DTYPE, WAIT, False), tied(W, "l,l,r"),
                                         acc + operands(acc, a_addr, b_addr, use, ROW_BYTES),
                                         dtype=f32s(len(acc)), is_pure=False, pack=acc[0].shape[1] // 2)

    @gluon.jit
    def block_sum(like, a_addr, b_addr, DTYPE: gl.constexpr, ROW_BYTES: gl.constexpr):
        """One block of K's own sum, A (64 rows at a_addr) @ B^T (W rows at b_addr, as mma's), waited for: a fresh
        accumulator shaped `like` (whose registers are neither read nor zeroed first). A warpgroup's collective."""
        W: gl.constexpr = len(like) * like[0].shape[1]
        return gl.inline_asm_elementwise(mma_asm(W, ROW_BYTES, DTYPE, 0, True), tied(W, "l,l,r", True),
                                         operands(like, a_addr, b_addr, 0, ROW_BYTES), dtype=f32s(len(like)),
                                         is_pure=False, pack=like[0].shape[1] // 2)

    @gluon.jit
    def wait(acc):
        """acc once every MMA of this warpgroup has finished (`wgmma.wait_group 0`, the registers tied through)."""
        W: gl.constexpr = len(acc) * acc[0].shape[1]
        return gl.inline_asm_elementwise("wgmma.wait_group.sync.aligned 0;", tied(W, ""), acc, dtype=f32s(len(acc)),
                                         is_pure=False, pack=acc[0].shape[1] // 2)

    @gluon.jit
    def add(acc, part):
        """acc + part, chunk by chunk."""
        out = (acc[0] + part[0], )
        for j in gl.static_range(1, len(acc)):
            out = out + (acc[j] + part[j], )
        return out


MAX_CONSUMERS = 3  # four consumer warpgroups launch at 96 registers a thread: too few for a 64x160 MMA's operands


def eligible(a_t, b_t, row_bytes, swizzle, width, consumers, turns, promote, b_swizzle=None):
    """Whether a tile `width` (BLOCK_N + REM) wide runs as one MMA a k step: A K-major, its blocks of K one swizzle
    span deep (32-128 bytes); B K-major alike (b_swizzle: its boxes' span); width a multiple of 8 up to 256, at most
    MAX_CONSUMERS consumer warpgroups, not in turns, FP8 promoted per block or not at all. (Row-major 16-bit B, MN-major
    for the MMA, ran one MMA in chunks of 64 columns correctly and no faster: results/current/gemm/ROUNDS.md.)"""
    b_ok = b_t and (b_swizzle or swizzle) == row_bytes
    return (not a_t and b_ok and row_bytes == swizzle and row_bytes in SWIZZLE_MODES and width % 8 == 0
            and width <= 256 and consumers <= MAX_CONSUMERS and not turns and promote in (0, 1))


def shared_offsets(ttgir, names, capability=90):
    """{allocation name: byte offset} by the compiler's own shared-memory allocation pass on a kernel's TTGIR."""
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


_offsets = {}


def offsets(kernel, args, consts, grid, names=("a_bufs", "b_bufs"), keys=("OFF_A", "OFF_B"), compile_fn=None):
    """{OFF_A: ..., OFF_B: ...} for `kernel` launched with (args, consts) on `grid`: the named allocations' shared
    offsets, by a first compile with zeros and a second with the offsets found (which must place them alike). Cached
    per configuration. Where this Triton's passes differ or the allocation moves, warns once and returns None (the
    caller runs the two-MMA form). compile_fn(args, consts): the compiled kernel (default: kernel.warmup)."""
    from triton.runtime.jit import mangle_type

    key = (kernel.fn.__name__ if hasattr(kernel, "fn") else id(kernel), tuple(sorted(consts.items())),
           tuple(mangle_type(x) if not isinstance(x, int) else x % 16 == 0 for x in args))
    if key in _offsets:
        return _offsets[key]
    compile_fn = compile_fn or (lambda a, c: kernel.warmup(*a, **c, grid=grid, num_warps=4))
    try:
        found = shared_offsets(compile_fn(args, {**consts, **dict.fromkeys(keys, 0)}).asm["ttgir"], names)
        offs = {k: found[n] for k, n in zip(keys, names)}
        again = shared_offsets(compile_fn(args, {**consts, **offs}).asm["ttgir"], names)
        if again != found:
            raise RuntimeError(f"the shared allocations moved between the two compiles: {found} then {again}")
    except Exception as e:  # this Triton's passes or IR differ from 3.6's: the two-MMA form serves
        warnings.warn(f"fused_ops.wide_mma: no shared offsets ({type(e).__name__}: {e}); tiles of widths between "
                      f"powers of two run two MMAs a k step", RuntimeWarning, stacklevel=2)
        offs = None
    _offsets[key] = offs
    return offs
