"""The warp-specialized Gluon FP8 GEMM of fused_ops/wgmma.py (scaled_mm's kernel on Hopper for precise accumulation).
On the CPU: compiled for sm_90a with Triton's ptxas (no GPU needed): the default tile fits shared memory without
register spills, its warps are specialized (setmaxnreg) and ptxas does not serialize its MMAs (C7514, what sank the
single-partition version); scaled_mm's kernel choice and refusals. On a Hopper GPU: edge shapes (precise and fast,
per-tensor and row-wise scales) against float64 and torch._scaled_mm's error, a long K, poisoned outputs, many calls in
a row with fresh data."""

import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile

import pytest
import torch

from fused_ops import config as C
from fused_ops import fp8, wgmma, wide_mma

pytestmark = pytest.mark.skipif(not wgmma.available(), reason="this Triton has not the Gluon Hopper API of 3.6 on")

ON_HOPPER = (torch.cuda.is_available() and __import__("iris").BACKEND == "cuda"
             and torch.cuda.get_device_capability()[0] == 9)


def _tile(cfg):
    return cfg.block_m, cfg.block_n, cfg.block_k


def compile_sm90(tile, promote, scales, out_dtype=torch.bfloat16, dtype=torch.float8_e4m3fn, b_t=True, block_m=128,
                 swap=False, split_k=1, rem=0, turns=False):
    """(PTX, shared bytes, ptxas's report, whether its rem tiles are one wide MMA) of wgmma_ws_kernel for sm_90a,
    compiled here without a GPU, with the arguments wgmma.run would pass."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    bn, bk, stages = tile
    a, c = torch.empty(256, 1024, dtype=dtype), torch.empty(256, 256, dtype=out_dtype)
    b = torch.empty(1024, 256, dtype=dtype)
    b = b.t() if b_t else b
    sa = sb = torch.ones(1 if scales < 2 else 256) if scales else None
    args, consts, _, _ = wgmma.kernel_args(a, b, c, bn, bk, stages, block_m, swap, sa, sb, promote, split_k=split_k,
                                           rem=rem, turns=turns)
    assert consts["SPLIT_K"] == split_k and consts["REM"] == rem
    fn = wgmma.wgmma_ws_kernel

    def build(_, consts):
        sig = dict(zip(fn.arg_names, [mangle_type(x) for x in args[:5]] + ["*fp32", "*fp32"] + ["i32"] * 4))
        consts = {**{q.name: q.default for q in fn.params if q.name not in sig and q.name not in consts}, **consts}
        sig.update({k: "constexpr" for k in consts})  # (Triton 3.7 on wants the defaults named too)
        src = GluonASTSource(fn=fn, signature=sig, attrs={},
                             constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()})
        return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    if consts["WIDE"]:  # as wgmma.run: the ring's shared offsets from a first compile
        offs = wide_mma.offsets(fn, args, consts, None, compile_fn=build)
        assert offs is not None, "no shared offsets for the wide MMA"
        consts.update(offs)
    kernel = build(args, consts)
    ptxas = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.ptx")
        with open(path, "w") as f:
            f.write(kernel.asm["ptx"])
        report = subprocess.run([ptxas, "-arch=sm_90a", "-v", path, "-o", os.path.join(d, "k.cubin")],
                                capture_output=True, text=True, check=True).stderr
    return kernel.asm["ptx"], kernel.metadata.shared, report, consts["WIDE"]


FP8, BF16 = torch.float8_e4m3fn, torch.bfloat16


# id: (promote, scales, out dtype, operand dtype, B K-major,
#      (block_n, block_k, stages[, block_m[, swap[, split_k[, rem[, turns]]]]]))
COMPILE_CASES = {
    "fp8-precise-tensor": (True, 1, "bfloat16", "float8_e4m3fn", True, (128, 128, 6)),
    "fp8-precise-row": (True, 2, "bfloat16", "float8_e4m3fn", True, (128, 128, 6)),
    "fp8-fast": (False, 1, "bfloat16", "float8_e4m3fn", True, (256, 128, 3)),
    "fp8-precise-fp32-out": (True, 1, "float32", "float8_e4m3fn", True, (128, 128, 6)),
    "bf16": (False, 0, "bfloat16", "bfloat16", False, (256, 64, 3)),
    "bf16-b-k-major": (False, 0, "bfloat16", "bfloat16", True, (128, 64, 6)),
    "bf16-192-rows": (False, 0, "bfloat16", "bfloat16", False, (128, 64, 4, 192)),
    "bf16-64-wide": (False, 0, "bfloat16", "bfloat16", False, (64, 64, 8)),
    "fp8-precise-64-wide": (True, 2, "bfloat16", "float8_e4m3fn", True, (64, 128, 8)),
    "fp8-precise-192-rows": (True, 1, "bfloat16", "float8_e4m3fn", True, (128, 128, 4, 192)),
    "bf16-swap-one-consumer": (False, 0, "bfloat16", "bfloat16", False, (64, 64, 4, 256, True)),
    "bf16-swap-three-consumers": (False, 0, "bfloat16", "bfloat16", False, (192, 64, 4, 64, True)),
    "bf16-swap-b-k-major-16": (False, 0, "bfloat16", "bfloat16", True, (128, 64, 6, 16, True)),
    "fp8-precise-swap-16": (True, 2, "bfloat16", "float8_e4m3fn", True, (64, 256, 4, 16, True)),  # decode default
    "fp8-fast-swap-16": (False, 1, "bfloat16", "float8_e4m3fn", True, (64, 128, 8, 16, True)),
    "bf16-swap-32-rows": (False, 0, "bfloat16", "bfloat16", False, (64, 128, 6, 32, True)),  # 17-32 rows' default
    "fp8-precise-swap-32-rows": (True, 1, "bfloat16", "float8_e4m3fn", True, (64, 256, 4, 32, True)),
    "bf16-swap-two-consumers-unaligned-b": (False, 0, "bfloat16", "bfloat16", False, (128, 64, 3, 256, True)),
    # split-K: fp32 partials through fp32 staging tiles
    "bf16-split-k": (False, 0, "bfloat16", "bfloat16", False, (64, 64, 6, 128, False, 4)),
    "bf16-split-k-192-rows": (False, 0, "bfloat16", "bfloat16", False, (64, 64, 6, 192, False, 2)),
    "bf16-swap-split-k": (False, 0, "bfloat16", "bfloat16", True, (128, 64, 4, 128, True, 2)),
    "fp8-precise-split-k": (True, 1, "bfloat16", "float8_e4m3fn", True, (64, 128, 6, 128, False, 4)),
    # swapped tiles block_m + rem rows of A wide: a second MMA of N = rem (129-144 rows as one tile)
    "bf16-swap-rem16": (False, 0, "bfloat16", "bfloat16", False, (64, 64, 6, 128, True, 1, 16)),
    "bf16-swap-rem16-split-k": (False, 0, "bfloat16", "bfloat16", False, (64, 64, 6, 128, True, 2, 16)),
    "bf16-swap-two-consumers-rem32-b-k-major": (False, 0, "bfloat16", "bfloat16", True, (128, 64, 4, 128, True, 1, 32)),
    "fp8-precise-swap-rem16": (True, 1, "bfloat16", "float8_e4m3fn", True, (64, 128, 6, 128, True, 1, 16)),
    # tiles block_n + rem columns of B wide (160 = 128 + 32, 320 = 256 + 64): one wave where powers of two need two
    "bf16-rem32": (False, 0, "bfloat16", "bfloat16", False, (128, 64, 4, 128, False, 1, 32)),
    "bf16-rem64-320-wide": (False, 0, "bfloat16", "bfloat16", False, (256, 64, 2, 128, False, 1, 64)),
    "bf16-rem32-192-rows": (False, 0, "bfloat16", "bfloat16", False, (128, 64, 3, 192, False, 1, 32)),
    "bf16-rem32-256-rows": (False, 0, "bfloat16", "bfloat16", False, (128, 32, 5, 256, False, 1, 32)),  # default
    "bf16-256-rows-b-k-major": (False, 0, "bfloat16", "bfloat16", True, (128, 64, 3, 256)),
    "bf16-rem64-192-wide": (False, 0, "bfloat16", "bfloat16", False, (128, 64, 4, 128, False, 1, 64)),  # default
    "bf16-rem32-96-wide": (False, 0, "bfloat16", "bfloat16", False, (64, 64, 6, 128, False, 1, 32)),  # default
    "bf16-rem16-256-rows": (False, 0, "bfloat16", "bfloat16", False, (128, 32, 5, 256, False, 1, 16)),  # default
    "bf16-rem32-288-wide": (False, 0, "bfloat16", "bfloat16", False, (256, 32, 5, 128, False, 1, 32)),  # default
    "fp8-fast-rem32-96-wide": (False, 1, "bfloat16", "float8_e4m3fn", True, (64, 128, 6, 128, False, 1, 32)),  # default
    "bf16-rem16-split-k-b-k-major": (False, 0, "bfloat16", "bfloat16", True, (128, 64, 4, 128, False, 2, 16)),
    "fp8-precise-row-rem16": (True, 2, "bfloat16", "float8_e4m3fn", True, (128, 128, 4, 128, False, 1, 16)),
    "fp8-fast-rem32": (False, 1, "bfloat16", "float8_e4m3fn", True, (128, 128, 4, 128, False, 1, 32)),
    "fp8-fast-rem32-256-rows": (False, 1, "bfloat16", "float8_e4m3fn", True, (128, 128, 3, 256, False, 1, 32)),
    "fp8-precise-rem32": (True, 1, "bfloat16", "float8_e4m3fn", True, (128, 128, 4, 128, False, 1, 32)),  # default
    # widths that are sums of powers of two (one wide MMA; REM's boxes R = its lowest power of two): 224 (128 + 64
    # + 32), 112 (64 + 32 + 16)
    "fp8-fast-rem96-224-wide": (False, 1, "bfloat16", "float8_e4m3fn", True, (128, 128, 4, 128, False, 1, 96)),
    "fp8-fast-rem48-112-wide": (False, 1, "bfloat16", "float8_e4m3fn", True, (64, 128, 6, 128, False, 1, 48)),
    "fp8-precise-row-rem48-112-wide": (True, 2, "bfloat16", "float8_e4m3fn", True, (64, 128, 6, 128, False, 1, 48)),
    "bf16-rem96-224-wide-b-k-major": (False, 0, "bfloat16", "bfloat16", True, (128, 64, 4, 128, False, 1, 96)),
    # 64-row tiles, one consumer warpgroup, deep rings (128 rows in two tiles, each streaming its own columns of B)
    "bf16-64-rows": (False, 0, "bfloat16", "bfloat16", False, (64, 64, 12, 64)),
    "bf16-64-rows-128-deep": (False, 0, "bfloat16", "bfloat16", False, (64, 128, 6, 64)),  # default
    "bf16-64-rows-128-deep-b-k-major": (False, 0, "bfloat16", "bfloat16", True, (64, 128, 6, 64)),
    "fp8-precise-64-rows-rem8": (True, 1, "bfloat16", "float8_e4m3fn", True, (64, 128, 12, 64, False, 1, 8)),
    "fp8-fast-64-rows-rem16": (False, 1, "bfloat16", "float8_e4m3fn", True, (64, 128, 12, 64, False, 1, 16)),
    # ... two consumers taking turns on a 64-row tile's blocks of K (precise FP8: one's MMAs run while the other adds)
    "fp8-precise-64-rows-turns-rem16": (True, 1, "bfloat16", "float8_e4m3fn", True,
                                        (128, 128, 8, 64, False, 1, 16, True)),
    "fp8-precise-row-64-rows-turns": (True, 2, "bfloat16", "float8_e4m3fn", True,
                                      (64, 128, 12, 64, False, 1, 16, True)),
    "bf16-64-rows-turns-split-k": (False, 0, "bfloat16", "bfloat16", False, (64, 64, 8, 64, False, 2, 0, True)),
    # ... 160 and 192 wide (128 + 32, 128 + 64) at 1024 rows of 1280-1536 columns
    "bf16-64-rows-rem64-192-wide": (False, 0, "bfloat16", "bfloat16", False, (128, 64, 6, 64, False, 1, 64)),  # default
    "bf16-64-rows-rem64-320-wide": (False, 0, "bfloat16", "bfloat16", False, (256, 64, 4, 64, False, 1, 64)),  # default
    "fp8-fast-64-rows-rem32-160-wide": (False, 1, "bfloat16", "float8_e4m3fn", True, (128, 128, 7, 64, False, 1, 32)),
    "fp8-precise-64-rows-turns-rem64-192-wide": (True, 1, "bfloat16", "float8_e4m3fn", True,
                                                 (128, 128, 4, 64, False, 1, 64, True)),  # default
    # precise FP8 promoted two blocks at a time (promote="pairs"): a third 64x128 sum per consumer, MMAs not serialized
    "fp8-precise-pairs": ("pairs", 1, "bfloat16", "float8_e4m3fn", True, (128, 128, 6)),
    "fp8-precise-row-pairs": ("pairs", 2, "bfloat16", "float8_e4m3fn", True, (128, 128, 6)),
    "fp8-precise-64-rows-pairs": ("pairs", 1, "bfloat16", "float8_e4m3fn", True, (128, 128, 8, 64)),
    "fp8-precise-split-k-pairs": ("pairs", 1, "bfloat16", "float8_e4m3fn", True, (64, 128, 6, 128, False, 4)),
    "fp8-precise-pairs-rem16": ("pairs", 1, "bfloat16", "float8_e4m3fn", True, (128, 128, 4, 128, False, 1, 16)),
    "fp8-precise-row-pairs-rem16": ("pairs", 2, "bfloat16", "float8_e4m3fn", True, (128, 128, 4, 128, False, 1, 16)),
    "fp8-precise-64-rows-pairs-rem8": ("pairs", 1, "bfloat16", "float8_e4m3fn", True, (128, 128, 8, 64, False, 1, 8)),
}


# matmul's and scaled_mm's own picks that the GPU tests below assert, by shape; the CPU test after these tables
# computes them on the host, so a change to fused_ops/config.py that moves one fails on the CPU, not first on a GPU.
# 64-row tiles where they fill most of a wave: (m, n, k, block_n, rem_cols)
ROW64_DEFAULTS = {"bf16": ((128, 3584, 4608, 64, 0), (100, 3456, 5120, 64, 0), (128, 3072, 4160, 64, 0),
                           (1024, 1536, 2880, 128, 64), (1000, 1280, 3072, 128, 64), (1024, 2304, 2880, 256, 64),
                           (1000, 2560, 3000, 256, 64), (4096, 640, 2880, 256, 64), (4000, 1280, 2944, 256, 64)),
                  "fp8": ((128, 4608, 6144, 64, 16), (1024, 1152, 2048, 128, 16), (120, 9472, 3584, 128, 16),
                          (1024, 1280, 3072, 128, 32), (1000, 1536, 2944, 128, 64), (1024, 1280, 2880, 128, 32))}
# ... bf16 on K-major B (nn.Linear's weight.t())
ROW64_K_MAJOR_DEFAULTS = ((128, 3584, 4608, 64, 0), (128, 3072, 4160, 64, 0), (1024, 1536, 2880, 128, 64),
                          (1024, 2304, 2944, 256, 64), (1024, 2304, 3584, 256, 32))
# few tiles: the Gluon kernel in slices of K, swapped tiles rem rows of A wider: (m, n, k, split_k, rem_rows)
FEW_TILE_DEFAULTS = {"bf16": ((100, 1536, 4096, 5, 0), (128, 128, 32768, 33, 0), (129, 2048, 2048, 4, 16),
                              (72, 1000, 8192, 8, 0), (150, 1000, 4096, 8, 32), (128, 2304, 3584, 3, 0),
                              (128, 4608, 12288, 3, 0), (128, 4608, 7168, 1, 0)),
                     "fp8": ((100, 1536, 8192, 5, 0), (128, 128, 32768, 32, 0), (129, 4096, 1024, 1, 0),
                             (140, 1024, 8192, 8, 16), (128, 4608, 12288, 1, 0))}
# precise FP8 at 1024x1280 below the 64x160 tiles' K (2880): one wave of 120 192x64 tiles (three consumers)
FP8_WAVE_192 = (1024, 1280, 2560)


def test_gpu_tests_shapes_pick_what_they_assert():
    from benchmarks.gemm_picks import pick
    for mode, k_major, shapes in (("bf16", False, ROW64_DEFAULTS["bf16"]), ("fp8", False, ROW64_DEFAULTS["fp8"]),
                                  ("fp8 fast", False, ROW64_DEFAULTS["fp8"]), ("bf16", True, ROW64_K_MAJOR_DEFAULTS)):
        for m, n, k, width, rem in shapes:
            kernel, cfg = pick(m, n, k, mode, b_k_major=k_major)
            assert (kernel, cfg.block_m, cfg.block_n, cfg.rem_cols or 0, bool(cfg.turns)) == (
                "wgmma", 64, width, rem, mode == "fp8"), (mode, k_major, m, n, k, cfg)
    for mode, shapes in FEW_TILE_DEFAULTS.items():
        for m, n, k, split, rem in shapes:
            kernel, cfg = pick(m, n, k, mode)
            assert (kernel, cfg.split_k, cfg.rem_rows or 0) == ("wgmma", split, rem), (mode, m, n, k, cfg)
    kernel, cfg = pick(*FP8_WAVE_192, "fp8")
    assert (kernel, cfg.block_m, cfg.block_n) == ("wgmma", 192, 64), cfg


def compile_cases(names=None):
    """{id: facts} of these COMPILE_CASES entries (None: all) compiled for sm_90a (run in a process of its own: once
    the Triton interpreter has run a kernel in a process, compiling there fails)."""
    out = {}
    for name in names or COMPILE_CASES:
        promote, scales, out_dtype, dtype, b_t, tile = COMPILE_CASES[name]
        out_dtype, dtype = getattr(torch, out_dtype), getattr(torch, dtype)
        tile, (block_m, swap, split_k, rem, turns) = tile[:3], (tile[3:] + (128, False, 1, 0, False)[len(tile) - 3:])
        staged = 4 if split_k > 1 else out_dtype.itemsize  # split-K stages fp32 partials
        while not wgmma.fits(*tile, dtype.itemsize, staged, block_m, rem, turns) or turns and tile[2] % 2:
            tile = (tile[0], tile[1], tile[2] - 1)  # fp32 C staging tiles take a stage's worth (turns: even)
        ptx, shared, report, wide = compile_sm90(tile, promote, scales, out_dtype, dtype, b_t, block_m, swap, split_k,
                                                 rem, turns)
        out[name] = dict(shared=shared, report=report, setmaxnreg="setmaxnreg" in ptx, wide=wide,
                         mma_and_tma="wgmma.mma_async" in ptx and "cp.async.bulk.tensor" in ptx,
                         in_flight=re.search(r"wgmma\.wait_group\.sync\.aligned [12]\b", ptx) is not None,
                         mma_widths=sorted({int(n) for n in re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)",
                                                                       ptx)}))
    return out


def compiled_in_subprocesses(names):
    """compile_cases(names) run in up to four processes of their own."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    code = ("import json, sys; sys.path[:0] = ['.', 'tests']; import test_wgmma; "
            "print(json.dumps(test_wgmma.compile_cases(sys.argv[1:])))")
    procs = max(1, min(4, os.cpu_count() or 1))  # the cases split over the cores
    runs = [subprocess.Popen([sys.executable, "-c", code, *names[i::procs]], cwd=root, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(min(procs, len(names)))]
    out = {}
    for run in runs:
        stdout, stderr = run.communicate(timeout=600)
        assert run.returncode == 0, stderr[-3000:]
        out.update(json.loads(stdout.strip().splitlines()[-1]))
    return out


@pytest.fixture(scope="module")
def compiled():
    return compiled_in_subprocesses(list(COMPILE_CASES))


@pytest.mark.parametrize("name", list(COMPILE_CASES))
def test_default_tile_compiles_for_sm90_specialized_without_spills(compiled, name):
    facts, promote = compiled[name], COMPILE_CASES[name][0]
    assert facts["shared"] <= wgmma.SMEM_BYTES + 1024, facts["shared"]
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", facts["report"]), facts["report"]
    assert "C7514" not in facts["report"] and "serialized" not in facts["report"], facts["report"]  # MMAs in turn
    assert facts["setmaxnreg"]  # the load warp gives its registers to the consumer warpgroups
    assert facts["mma_and_tma"]
    turns = COMPILE_CASES[name][5][7:] == (True,)
    if not promote and not turns:  # one block's MMAs stay in flight while the next one's issue (turns: the other
        assert facts["in_flight"]  # consumer's run while one waits)
    tile = COMPILE_CASES[name][5]
    block_m, swap, rem = (tile[3:] + (128, False, 1, 0)[len(tile) - 3:])[:2] + (tile[6] if len(tile) > 6 else 0, )
    width = (block_m if swap else tile[0]) + rem
    if facts["wide"]:  # one MMA as wide as the tile a k step (fused_ops/wide_mma), else Gluon's powers of two
        assert facts["mma_widths"] == [width], facts["mma_widths"]
    else:
        assert all(w & (w - 1) == 0 for w in facts["mma_widths"]), facts["mma_widths"]


def test_rem_tiles_on_k_major_operands_compile_as_one_wide_mma_where_registers_allow(compiled):
    # K-major A and B (FP8; bf16 with nn.Linear's weights; swapped with C transposed), up to three consumers, FP8
    # promoted per block or not at all: one MMA 72-160 wide; B row-major, four consumers, turns or pairs: two MMAs
    for name in ("fp8-fast-rem32", "fp8-precise-rem32", "fp8-precise-row-rem16", "fp8-fast-rem32-96-wide",
                 "fp8-precise-64-rows-rem8", "fp8-fast-64-rows-rem16", "fp8-precise-swap-rem16",
                 "bf16-rem16-split-k-b-k-major", "bf16-swap-two-consumers-rem32-b-k-major", "fp8-fast-rem96-224-wide",
                 "fp8-fast-rem48-112-wide", "fp8-precise-row-rem48-112-wide", "bf16-rem96-224-wide-b-k-major"):
        assert compiled[name]["wide"], name
    for name in ("bf16-rem32", "bf16-rem64-320-wide", "fp8-fast-rem32-256-rows", "fp8-precise-64-rows-turns-rem16",
                 "fp8-precise-pairs-rem16", "bf16-swap-rem16"):
        assert not compiled[name]["wide"], name


def test_scaled_mm_picks_the_tile_loop_where_wgmma_cannot_run_or_loses_and_says_why():
    a = (torch.randn(64, 64) / 8).to(FP8)
    b = (torch.randn(32, 64) / 8).to(FP8).t()
    c = torch.empty(64, 32, dtype=BF16)
    cfg = C.Config(block_m=128, block_n=128, block_k=256, group_m=8, gemm_sms=132, comm_sms=1, num_stages=3,
                   num_warps=8, tma=None, split_k=1, split_tail=False)
    assert not wgmma.supports(a, b, c)  # CPU tensors
    assert fp8.pick_kernel(a, b, c, cfg, None, False, None) == ("tile_loop", cfg)
    with pytest.raises(ValueError, match="kernel='wgmma' needs a Hopper GPU"):
        fp8.pick_kernel(a, b, c, cfg, None, False, "wgmma")
    with pytest.raises(ValueError, match="expected None .* 'wgmma' or 'tile_loop'"):
        fp8.pick_kernel(a, b, c, cfg, None, False, "cutlass")
    # the Gluon kernel where its tiles fill most SMs (FP8: 128x128; bf16: where the defaults
    # chose whole 128-row tiles); decode rows: swapped tiles (below)
    picked = C.wgmma_config(cfg, 1024, 2560, 132, FP8)  # 160 tiles of 128x128 (2 waves), 120 of 192x128 (1 wave,
    # 12 SMs idle) or 128 of 128 x (128 + 32): the last
    assert (_tile(picked), picked.num_stages, picked.rem_cols) == ((128, 128, 128), 4, 32)
    picked = C.wgmma_config(cfg, 1024, 2112, 132, FP8)  # 102 tiles of 192x128, 112 of 128x160, 120 of 128x144
    assert (_tile(picked), picked.rem_cols) == ((128, 128, 128), 16)
    assert _tile(C.wgmma_config(cfg, 4096, 4096, 132, FP8)) == (128, 128, 128)  # 8 full waves: no gain
    assert C.wgmma_config(cfg, 4096, 4096, 132, FP8, fast=True).block_n == 256
    # fast accumulation takes the precise tiles too: 96 of 128x128 where 128x256 ones are 48
    assert _tile(C.wgmma_config(cfg, 128, 12288, 132, FP8, fast=True)) == (128, 128, 128)
    assert C.wgmma_config(cfg, 16384, 64, 132, FP8, fast=True).block_n == 64  # N of 64: the narrow tile
    # fast accumulation, per-tensor scales: 256x160 where it fills one wave (128 tiles) and 128x256 needs two, unless
    # 128x144 ones (one wide MMA a k step: wide_mma) fill two
    for m, n, want in ((4096, 1280, (256, 160)), (4096, 1152, (128, 144)), (1024, 4736, (128, 144))):
        four = C.wgmma_config(cfg, m, n, 132, FP8, fast=True)
        assert (four.block_m, four.block_n + four.rem_cols) == want, (m, n, four)
        other = C.wgmma_config(cfg, m, n, 132, FP8, fast=True, row_scales=True)  # row-wise: would spill
        assert other.block_m < 256, (m, n, other)
    # fast accumulation, per-tensor scales: 224-wide tiles (128 + 96, one wide MMA) where N is a multiple of 224 (one
    # wave of 128 at 1024x3584, where 128x256 ones are 112); not where their last column wastes a tile (8192), nor
    # with row-wise scales or precise accumulation (untimed; a 64 x 224 block sum beside the total spills)
    for m, n, want in ((1024, 3584, (128, 224)), (1024, 7168, (128, 224)), (4096, 3584, (128, 224)),
                       (1024, 8192, (128, 256))):
        got = C.wgmma_config(cfg, m, n, 132, FP8, fast=True, k=4096)
        assert (got.block_m, got.block_n + got.rem_cols) == want, (m, n, got)
        row = C.wgmma_config(cfg, m, n, 132, FP8, fast=True, k=4096, row_scales=True)
        assert row.block_n + row.rem_cols != 224, (m, n, row)
        got = C.wgmma_config(cfg, m, n, 132, FP8, k=4096)
        assert got.block_n + got.rem_cols <= 192, (m, n, got)
    # precise, per-tensor: 128x192 (one wide MMA) rather than 192x128 from K of 2048 and beyond 128 rows
    for m, n, k, want in ((4096, 53248, 16384, (128, 192)), (16384, 16384, 26624, (128, 192)),
                          (16384, 2880, 720, (192, 128)), (128, 64640, 7168, (128, 128))):
        got = C.wgmma_config(cfg, m, n, 132, FP8, k=k)
        assert (got.block_m, got.block_n + got.rem_cols) == want, (m, n, k, got)
    # FP8, either accumulation: 128x192 tiles where they fill one wave (1024x2880: 120 of them), not in two
    for fast in (False, True):
        wave = C.wgmma_config(cfg, 1024, 2880, 132, FP8, fast=fast, k=2880)
        assert (_tile(wave)[:2], wave.rem_cols) == ((128, 128), 64), (fast, wave)
        assert C.wgmma_config(cfg, 1024, 3584, 132, FP8, fast=fast, k=5120).rem_cols != 64
        # beyond 128 rows, Gluon tiles from half the SMs (80 128x128 at 1024x1280: precise, one wave of 120 192x64
        # ones; fast accumulation: 112 96-wide ones, at K under 2880: from there 64x160 ones); not with 40 (1024x640)
        few = C.wgmma_config(cfg, 1024, 1280, 132, FP8, fast=fast, k=2048)
        assert (_tile(few)[:2], few.rem_cols) == (((128, 64), 32) if fast else ((192, 64), 0)), (fast, few)
        assert C.wgmma_config(cfg, 1024, 640, 132, FP8, fast=fast, k=2880) is None
    # 65-128 rows, long K: the FP8 split tile in 3 slices where its tiles leave 3-fold SMs (36 at 128x2304)
    few = C.wgmma_config(cfg, 128, 2304, 132, FP8, k=16384)
    assert (_tile(few)[:2], few.split_k, few.swap_ab) == ((128, 64), 3, False)
    # FP8 decode rows: swapped 16x64 tiles, in 3 slices of K where they leave 3-fold SMs (a second kernel adds them)
    for fast in (False, True):
        assert C.wgmma_config(cfg, 16, 2304, 132, FP8, fast=fast, k=16384).split_k == 3  # 36 tiles
        assert C.wgmma_config(cfg, 16, 3584, 132, FP8, fast=fast, k=16384).split_k == 1  # 56 tiles: whole
        assert C.wgmma_config(cfg, 16, 2560, 132, FP8, fast=fast, k=2880).split_k == 1  # too few blocks for 3
    assert C.wgmma_config(cfg, 8192, 8192, 132, FP8, fast=True).block_n == 256  # many waves: the 128x256 tile
    assert C.wgmma_config(cfg, 128, 8192, 132, FP8) is None  # 64 tiles for 132 SMs (no k: nothing for few tiles)
    assert _tile(C.wgmma_config(cfg, 128, 9216, 132, FP8))[:2] == (128, 128)  # 72 of 132, precise (no k)
    # with k: 64-row tiles 144 wide, 128 of them (WGMMA_FP8_*_ROW64_TILES); precise: two consumers taking turns on K
    for fast in (False, True):
        rows64 = C.wgmma_config(cfg, 128, 9216, 132, FP8, fast=fast, k=7168)
        assert (_tile(rows64), rows64.rem_cols, rows64.turns) == ((64, 128, 128), 16, not fast)
    assert C.wgmma_config(cfg, 128, 12288, 132, FP8) is not None  # 96 tiles
    assert C.wgmma_config(cfg, 16, 19008, 132, FP8) is None  # decode rows: 16-row tiles where swapped ones need 3 waves
    decode = C.wgmma_config(cfg, 16, 6912, 132, FP8)  # 108 swapped 16x64 tiles: one wave
    assert (_tile(decode), decode.num_stages, decode.swap_ab) == (C.WGMMA_FP8_DECODE_TILE[:3], 4, True)
    assert _tile(C.wgmma_config(cfg, 1, 4000, 132, FP8, fast=True)) == C.WGMMA_FP8_DECODE_TILE[:3]
    assert C.wgmma_config(cfg, 16, 19008, 132, FP8, force=True).swap_ab
    # 17-32 rows, either dtype: 32x64 swapped tiles up to two waves (the tile loop pads them to 64-row tiles)
    for dtype, tile in ((BF16, C.WGMMA_ROWS_TILE), (FP8, C.WGMMA_FP8_ROWS_TILE)):
        rows = C.wgmma_config(dataclasses.replace(cfg, block_m=64), 32, 14336, 132, dtype)  # 224 tiles
        assert (_tile(rows), rows.num_stages, rows.swap_ab) == (tile[:3], tile[3], True)
        wide = C.wgmma_config(dataclasses.replace(cfg, block_m=64), 24, 32768, 132, dtype)  # 512 swapped tiles
        assert wide is None or not wide.swap_ab  # (FP8: 256 128x128 tiles fill the SMs)
    assert C.wgmma_config(dataclasses.replace(cfg, block_m=64), 64, 5120, 132, BF16) is None  # 64 rows: even
    wide = dataclasses.replace(cfg, block_n=256, block_k=64)
    assert _tile(C.wgmma_config(wide, 4096, 4096, 132, BF16)) == (128, 256, 64)
    assert _tile(C.wgmma_config(cfg, 1024, 2816, 132, BF16)) == (192, 128, 64)  # one wave, where the others need two
    # 128 x (128 + 32) tiles: one wave of 128 where 120 192x128 ones leave 12 SMs idle, or 74 128x256 ones 58
    for m, n in ((1024, 2560), (128, 18944), (128, 19008)):  # (the last: 119 tiles, one row of tiles)
        picked = C.wgmma_config(cfg, m, n, 132, BF16)
        assert (_tile(picked), picked.rem_cols, picked.swap_ab) == ((128, 128, 64), 32, False)
    # 128 x (256 + 32) tiles, 32 deep, only in one wave: 132 at 128 x 38016 where the 160-wide ones need two, 128
    # at 1024 x 4608 and 4096 x 1152, where 256 x 144 ones needed the same wave; not in two (128 x 76032)
    for m, n in ((128, 38016), (1024, 4608), (4096, 1152)):
        picked = C.wgmma_config(cfg, m, n, 132, BF16)
        assert (_tile(picked), picked.num_stages, picked.rem_cols) == ((128, 256, 32), 5, 32), (m, n)
    assert C.wgmma_config(cfg, 128, 76032, 132, BF16).rem_cols == 64
    assert C.wgmma_config(cfg, 128, 38016, 132, FP8).block_n < 256  # (bf16 only)
    # ... but not in two waves of several rows of tiles, where 192x128 tiles ran faster on an H100
    assert not C.wgmma_config(cfg, 1024, 5632, 132, BF16).rem_cols
    # 256 x (128 + 32) tiles, four consumers: one wave of 128 where 192x128 tiles need two
    for m, n in ((4096, 1280), (1024, 5120)):
        picked = C.wgmma_config(cfg, m, n, 132, BF16)
        assert (_tile(picked), picked.num_stages, picked.rem_cols) == ((256, 128, 32), 5, 32)
    # ... and 256 x (128 + 16) where 160-wide ones leave a column mostly empty and 288-wide ones need two waves
    # (1024 x 4736: 4 x 33 tiles of 144, 8 x 17 of 288)
    picked = C.wgmma_config(cfg, 1024, 4736, 132, BF16)
    assert (_tile(picked), picked.num_stages, picked.rem_cols) == ((256, 128, 32), 5, 16)
    assert C.wgmma_config(cfg, 4096, 1280, 132, FP8).block_m < 256  # precise FP8 keeps a second accumulator
    assert C.wgmma_config(cfg, 1024, 5120, 132, FP8).rem_cols == 32  # (FP8's won on both GPUs)
    # FP8 fast accumulation: 96-wide tiles (64 + 32) where 128x128 ones leave SMs idle, but 64x144 ones (128 + 16)
    # where those fill 90% of the SMs (1152: 128 tiles), and from K of 2880 64x160 and 64x192 ones (128 of them);
    # precise keeps 128x128 under 2880
    for n in (1152, 1280, 1536):
        for k in (2048, 4096):
            picked = C.wgmma_config(cfg, 1024, n, 132, FP8, fast=True, k=k)
            want = ((64, 128), 16) if n == 1152 else ((128, 64), 32) if k < 2880 else ((64, 128), n // 8 - 128)
            assert (_tile(picked)[:2], picked.rem_cols) == want, (n, k, picked)
            # precise: 64-row tiles in turns where they fit (128 of them), one wave of 192x64 tiles where it fits
            # (108-120 of them), else 128x128; row-wise scales: 128x128
            want = (64, 128) if n == 1152 or k >= 2880 else (192, 64) if n < 1536 else (128, 128)
            assert _tile(C.wgmma_config(cfg, 1024, n, 132, FP8, k=k))[:2] == want, (n, k)
            assert _tile(C.wgmma_config(cfg, 1024, n, 132, FP8, k=k, row_scales=True))[:2] == (128, 128), (n, k)
    assert _tile(C.wgmma_config(wide, 4096, 3584, 132, BF16)) == (128, 128, 64)  # 448 wide tiles: 3.4 waves
    split = dataclasses.replace(cfg, split_k=2, split_tail=True)  # the tile loop's split last wave: the Gluon kernel
    # one whole wave of 132 swapped 256x64 tiles, where 102 192x128 tiles leave 30 SMs idle
    swapped = C.wgmma_config(split, 1024, 2112, 132, BF16)
    assert (_tile(swapped), swapped.swap_ab) == ((256, 64, 64), True)
    # B's rows not 128-byte aligned (N = 1000, 5000): swapped tiles, twice A's rows per pass over B
    unaligned = C.wgmma_config(cfg, 4096, 1000, 132, BF16, b_aligned=False)
    assert (_tile(unaligned), unaligned.swap_ab) == ((256, 128, 64), True)
    assert not C.wgmma_config(cfg, 4096, 1024, 132, BF16).swap_ab  # 128 128x256 tiles when aligned
    assert C.wgmma_config(cfg, 2048, 5000, 132, BF16, b_aligned=False).swap_ab
    # ... but 96-wide tiles (boxes of 64 and 32 columns) cost no more there: 120 of them at 1024x1440
    narrow96 = C.wgmma_config(cfg, 1024, 1440, 132, BF16, b_aligned=False)
    assert (_tile(narrow96), narrow96.rem_cols, narrow96.swap_ab) == ((128, 64, 64), 32, False)
    assert not C.wgmma_config(cfg, 4096, 4096, 132, BF16).swap_ab
    assert _tile(C.wgmma_config(cfg, 16384, 64, 132, BF16)) == (128, 64, 64)  # N = 64: no half-empty tiles
    picked = C.wgmma_config(cfg, 1024, 3072, 132, BF16)  # one wave of 128x192 (3 of 64-wide tiles cost more)
    assert (_tile(picked), picked.rem_cols) == ((128, 128, 64), 64)
    assert _tile(C.wgmma_config(cfg, 16384, 64, 132, FP8)) == (128, 64, 128)
    assert _tile(C.wgmma_config(cfg, 1024, 2816, 132, FP8)) == (192, 128, 128)  # FP8: 192-row tiles cost less
    assert C.wgmma_config(dataclasses.replace(cfg, block_m=64), 512, 4096, 132, BF16) is None
    assert not wgmma.fits(128, 128, 7, 1, 2)  # 7 stages and C's tiles exceed an SM's shared memory


def _quantized(m, n, k, row, device="cuda"):
    a32, w32 = torch.randn(m, k, device=device), torch.randn(n, k, device=device)
    sa = (a32.abs().amax(1, keepdim=True) if row else a32.abs().amax()) / 448
    sw = (w32.abs().amax(1, keepdim=True) if row else w32.abs().amax()) / 448
    a, b = (a32 / sa).to(FP8), (w32 / sw).to(FP8).t()
    sb = sw.t() if row else sw
    return a, b, sa.float().contiguous(), sb.float().contiguous()


def _operands(operands, m, n, k, row=False):
    """(a, b, scale_a, scale_b, float64 reference) of fresh random operands of a GPU test's kind: FP8 quantized per
    tensor or (row) per row, or bf16 with B row-major or K-major ("bf16-b-k-major"; scales None)."""
    if operands.startswith("fp8"):
        a, b, sa, sb = _quantized(m, n, k, row)
        return a, b, sa, sb, (a.double() * sa.double()) @ (b.double() * sb.double())
    a = torch.randn(m, k, device="cuda", dtype=BF16)
    b = (torch.randn(n, k, device="cuda", dtype=BF16).t() if operands == "bf16-b-k-major" else
         torch.randn(k, n, device="cuda", dtype=BF16))
    return a, b, None, None, a.double() @ b.double()


def _check_all(calls, operands):
    """Every (case, output, reference) of a test's calls, checked after the last call (stale state shows there)."""
    for case, c, ref in calls:
        err = ((c.double() - ref).norm() / ref.norm()).item()
        assert err < (2e-2 if operands == "fp8-fast" else 5e-3), (case, err)


# M, N, K at every edge of the 128x128x128 tile (1 row; N of 16, 48 and 1040; K of one block,
# odd and even block counts), and more tiles than programs
GPU_SHAPES = [(1, 16, 16), (127, 48, 208), (200, 1040, 384), (1000, 272, 1152), (4096, 4096, 1024)]


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("fast", [False, True], ids=["precise", "fast"])
@pytest.mark.parametrize("kernel", ["wgmma", "tile_loop"])
def test_fp8_kernels_match_float64_like_torch(fast, kernel):
    # (the tile loop at the edges with its boxes moved inside: gemm.EDGE_INSIDE, the default)
    for m, n, k in GPU_SHAPES:
        for call in range(6):  # fresh data and scales, poisoned output, both scalings
            row = call % 2 == 1
            a, b, sa, sb = _quantized(m, n, k, row)
            ref = (a.double() * sa.double()) @ (b.double() * sb.double())
            out = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
            assert fp8.scaled_mm(a, b, sa, sb, out=out, use_fast_accum=fast, kernel=kernel) is out
            err = ((out.double() - ref).norm() / ref.norm()).item()
            mine = torch._scaled_mm(a, b, sa, sb, out_dtype=BF16, use_fast_accum=fast)
            err_torch = ((mine.double() - ref).norm() / ref.norm()).item()
            assert err < max(1.5 * err_torch, 5e-3), (m, n, k, row, fast, kernel, err, err_torch)


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
def test_fp8_defaults_one_wave_of_192x64_tiles_match_float64():
    # scaled_mm's own pick at 1024x1280 below the 64x160 tiles' K (2880), per-tensor scales, precise: one wave of 120
    # 192x64 tiles (three consumers); row-wise scales keep 128x128 tiles. Fresh data and a poisoned output each call,
    # many calls in a row
    m, n, k = FP8_WAVE_192
    for call in range(8):
        row = call % 4 == 3
        a, b, sa, sb = _quantized(m, n, k, row)
        out = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
        if call in (0, 3):
            cfg, _ = fp8.plan(a, b, None, False)
            kernel, cfg = fp8.pick_kernel(a, b, out, cfg, None, False, None, row)
            assert kernel == "wgmma" and _tile(cfg)[:2] == ((128, 128) if row else (192, 64)), (row, cfg)
        fp8.scaled_mm(a, b, sa, sb, out=out)
        ref = (a.double() * sa.double()) @ (b.double() * sb.double())
        err = ((out.double() - ref).norm() / ref.norm()).item()
        err_torch = ((torch._scaled_mm(a, b, sa, sb, out_dtype=BF16).double() - ref).norm() / ref.norm()).item()
        assert err < max(1.5 * err_torch, 5e-3), (call, row, err, err_torch)


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
def test_fp8_precise_pairs_match_float64_and_promote_as_often():
    # promote="pairs": odd and even block counts (the lone last block), one and two consumers, slices of K (each
    # slice's own pairs), edge rows and columns, row-wise scales, more tiles than programs; a poisoned output and
    # fresh data each call, every call checked after the last. Errors as the per-block promotion's (same promotions)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    calls = []
    for m, n, k, block_m, block_n, split, row, rem in ((1000, 1000, 128, 128, 128, 1, False, 0),
                                                       (1024, 1792, 5 * 128, 128, 128, 1, False, 0),
                                                       (1024, 3584, 6144, 128, 128, 1, True, 0),
                                                       (300, 3000, 7 * 128, 64, 128, 1, False, 0),
                                                       (128, 4608, 9 * 128, 64, 64, 1, True, 0),
                                                       (256, 1024, 4608, 128, 128, 3, False, 0),
                                                       # 144-wide tiles (128 + 16): N a whole number of tiles,
                                                       # ending inside a tile's second part, row-wise scales; 64
                                                       # rows and 8 more columns, N ending inside a first part
                                                       (1000, 2304, 7 * 128, 128, 128, 1, False, 16),
                                                       (1024, 4608 - 8, 9 * 128, 128, 128, 1, True, 16),
                                                       (200, 1000, 3 * 128, 128, 128, 1, False, 16),
                                                       (300, 1096, 5 * 128, 64, 128, 1, True, 8)):
        a, b, sa, sb = _quantized(m, n, k, row)
        ref = (a.double() * sa.double()) @ (b.double() * sb.double())
        outs, stages = {}, 8 if block_m == 64 else 4 if rem else 6 if split == 1 else 5  # (slices stage fp32 C)
        for promote in ("pairs", True):
            c = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
            wgmma.run(a, b, c, block_n, 128, stages, sms, sa, sb, promote=promote, block_m=block_m, split_k=split,
                      rem=rem)
            outs[promote] = c
        calls.append(((m, n, k, block_m, split, row, rem), outs, ref))
    for case, outs, ref in calls:
        errs = {p: ((c.double() - ref).norm() / ref.norm()).item() for p, c in outs.items()}
        assert errs["pairs"] < max(1.05 * errs[True], 5e-3), (case, errs)
    a, b, sa, sb = _quantized(128, 256, 65536, False)  # long K: promoted as often as per block
    ref = (a.double() * sa.double()) @ (b.double() * sb.double())
    out = torch.empty(128, 256, device="cuda", dtype=BF16)
    wgmma.run(a, b, out, 128, 128, 6, sms, sa, sb, promote="pairs")
    torch_err = ((torch._scaled_mm(a, b, sa, sb, out_dtype=BF16).double() - ref).norm() / ref.norm()).item()
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1.5 * torch_err


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
def test_fp8_wgmma_precise_accumulation_at_long_k():
    # K = 65536: without promotion the tensor cores' reduced-precision sums drift (fast accumulation errs more)
    a, b, sa, sb = _quantized(128, 256, 65536, False)
    ref = (a.double() * sa.double()) @ (b.double() * sb.double())
    errs = {}
    for fast in (False, True):
        out = fp8.scaled_mm(a, b, sa, sb, use_fast_accum=fast, kernel="wgmma")
        errs[fast] = ((out.double() - ref).norm() / ref.norm()).item()
    torch_err = ((torch._scaled_mm(a, b, sa, sb, out_dtype=BF16).double() - ref).norm() / ref.norm()).item()
    assert errs[False] < 1.5 * torch_err and errs[False] < errs[True], (errs, torch_err)


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("b_t", [False, True], ids=["b-row-major", "b-k-major"])
def test_bf16_wgmma_matches_float64(b_t):
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for m, n, k in GPU_SHAPES + [(333, 1000, 520)]:
        for block_n, block_k, stages in ((256, 64, 3), (128, 64, 6), (64, 64, 8)):
            a = torch.randn(m, k, device="cuda", dtype=BF16)
            b = (torch.randn(n, k, device="cuda", dtype=BF16).t() if b_t else
                 torch.randn(k, n, device="cuda", dtype=BF16))
            c = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
            assert wgmma.supports(a, b, c)
            wgmma.run(a, b, c, block_n, block_k, stages, programs=sms)
            ref = a.double() @ b.double()
            err = ((c.double() - ref).norm() / ref.norm()).item()
            assert err < 1e-2, (m, n, k, block_n, err)


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("dtype", [BF16, FP8], ids=["bf16", "fp8-precise"])
def test_192_row_tiles_three_consumers_match_float64(dtype):
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for m, n, k in ((1, 16, 16), (200, 272, 208), (1000, 1040, 1152), (1024, 2560, 2880)):
        for call in range(3):
            c = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
            if dtype == FP8:
                a, b, sa, sb = _quantized(m, n, k, call % 2 == 1)
                ref = (a.double() * sa.double()) @ (b.double() * sb.double())
                wgmma.run(a, b, c, 128, 128, 4, sms, sa, sb, promote=True, block_m=192)
            else:
                a, b = torch.randn(m, k, device="cuda", dtype=BF16), torch.randn(k, n, device="cuda", dtype=BF16)
                ref = a.double() @ b.double()
                wgmma.run(a, b, c, 128, 64, 4, sms, block_m=192)
            err = ((c.double() - ref).norm() / ref.norm()).item()
            assert err < 5e-3, (m, n, k, call, err)


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("b_t", [False, True], ids=["b-row-major", "b-k-major"])
def test_256_row_tiles_four_consumers_match_float64(b_t):
    # four consumer warpgroups: 256-row tiles 128 wide, and 160 wide (REM's columns staged through the first part's
    # tile in turn); rows and columns past the tile's edges, one tile, more tiles than programs (several per
    # program), split-K; a poisoned output and fresh data per call, all calls checked after the last
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    calls = []
    for m, n, k, rem, split in ((1, 16, 16, 0, 1), (300, 1000, 520, 32, 1), (256, 160, 2880, 32, 1),
                                (4096, 1280, 576, 32, 1), (1000, 1040, 1152, 0, 1), (700, 328, 2048, 32, 2),
                                (4096, 4096, 256, 0, 1), (520, 200, 4096, 16, 3)):
        a = torch.randn(m, k, device="cuda", dtype=BF16)
        b = torch.randn(n, k, device="cuda", dtype=BF16).t() if b_t else torch.randn(k, n, device="cuda", dtype=BF16)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
        stages = 5  # 32-deep blocks, as the default 256x160 tile: split-K's fp32 staging tiles leave room for 3
        while not wgmma.fits(128, 32, stages, 2, 4 if split > 1 else 2, 256, rem):
            stages -= 1
        wgmma.run(a, b, c, 128, 32, stages, sms, block_m=256, split_k=split, rem=rem)
        calls.append(((m, n, k, rem, split), c, a.double() @ b.double()))
    _check_all(calls, "bf16")


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
def test_fp8_64_wide_tiles_match_float64():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for m, n, k in GPU_SHAPES + [(16384, 64, 4096)]:
        for call in range(2):  # per-tensor, then row-wise scales; fresh data, poisoned output
            a, b, sa, sb = _quantized(m, n, k, call == 1)
            ref = (a.double() * sa.double()) @ (b.double() * sb.double())
            c = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
            wgmma.run(a, b, c, 64, 128, 8, sms, sa, sb, promote=True)
            err = ((c.double() - ref).norm() / ref.norm()).item()
            assert err < 5e-3, (m, n, k, call, err)


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
def test_fp8_wgmma_many_calls_in_a_row():
    # 30 calls without a sync in between, each with fresh operands and a poisoned output (every third fp32, whose
    # staging tiles leave room for 5 stages, not 6), checked afterwards
    calls = []
    for i in range(30):
        a, b, sa, sb = _quantized(384, 512, 640, i % 2 == 1)
        out = torch.full((384, 512), float("nan"), device="cuda", dtype=torch.float32 if i % 3 == 0 else BF16)
        fp8.scaled_mm(a, b, sa, sb, out_dtype=out.dtype, out=out, kernel="wgmma")
        calls.append((a, b, sa, sb, out))
    for a, b, sa, sb, out in calls:
        ref = (a.double() * sa.double()) @ (b.double() * sb.double())
        assert ((out.double() - ref).norm() / ref.norm()).item() < 5e-3


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
def test_fp8_rows_off_32_bytes_are_copied_aligned_per_call_and_match_float64(monkeypatch):
    # K = 3696: rows 16- but not 32-byte aligned; the default copies B (6144x2048) or A (1024x8192) into aligned rows
    # before the Gluon kernel (local_gemm.sector_copies), per call, also inside a CUDA graph; fresh operands and a
    # poisoned output each time
    from fused_ops import local_gemm

    for m, n, k, which in ((6144, 2048, 3696, (False, True)), (1024, 8192, 3696, (True, False))):
        copies = []
        pad = local_gemm.pad_weight
        monkeypatch.setattr(local_gemm, "pad_weight", lambda w, multiple: copies.append(w) or pad(w, multiple))
        a, b, sa, sb = _quantized(m, n, k, False)
        assert local_gemm.sector_copies(m, n, k, a, b) == which
        out = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
        graph = torch.cuda.CUDAGraph()
        fp8.scaled_mm(a, b, sa, sb, out=out)  # compiles outside the capture
        with torch.cuda.graph(graph):
            fp8.scaled_mm(a, b, sa, sb, out=out)
        for i in range(3):
            a2, b2, sa2, sb2 = _quantized(m, n, k, i == 1)
            if i < 2:  # the graph's operands, refilled (per-tensor scales both times: the graph's kind)
                a.copy_(a2), b.copy_(b2)
                out.fill_(float("nan"))
                graph.replay()
                ref = (a.double() * sa.double()) @ (b.double() * sb.double())
            else:  # eager, row-wise scales
                out.fill_(float("nan"))
                fp8.scaled_mm(a2, b2, sa2, sb2, out=out)
                ref = (a2.double() * sa2.double()) @ (b2.double() * sb2.double())
            torch.cuda.synchronize()
            assert ((out.double() - ref).norm() / ref.norm()).item() < 5e-3, (m, n, k, i)
        # the first call, the capture, the eager one: the operand copied every time
        assert [c.shape for c in copies] == [a.shape if which[0] else b.shape] * 3, (m, n, k)
        monkeypatch.undo()


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
def test_bf16_b_rows_off_32_bytes_are_copied_aligned_per_call_and_match_float64(monkeypatch):
    # K-major 16-bit B whose rows are 16- but not 32-byte aligned (K = 360, 3000): matmul's Gluon kernel reads a copy
    # in aligned rows (local_gemm.sector_copies), per call, also inside a CUDA graph; not of row-major B (N = 3000)
    from fused_ops import local_gemm

    for m, n, k, k_major in ((16384, 2880, 360, True), (4096, 4096, 3000, True), (4096, 3000, 4096, False)):
        copies = []
        pad = local_gemm.pad_weight
        monkeypatch.setattr(local_gemm, "pad_weight", lambda w, multiple=64: copies.append(w) or pad(w, multiple))
        a = torch.randn(m, k, device="cuda", dtype=BF16)
        b = torch.randn(n, k, device="cuda", dtype=BF16).t() if k_major else torch.randn(k, n, device="cuda",
                                                                                        dtype=BF16)
        assert local_gemm.sector_copies(m, n, k, a, b) == (False, k_major)
        out = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
        local_gemm.matmul(a, b, out=out)  # compiles outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            local_gemm.matmul(a, b, out=out)
        for i in range(2):
            a.copy_(torch.randn_like(a)), b.copy_(torch.randn_like(b))
            out.fill_(float("nan"))
            graph.replay() if i == 0 else local_gemm.matmul(a, b, out=out)
            torch.cuda.synchronize()
            ref = a.double() @ b.double()
            assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2, (m, n, k, i)
        assert [c.shape for c in copies] == [b.shape] * 3 * k_major, (m, n, k)  # the first call, capture, eager
        monkeypatch.undo()


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("operands", ["bf16-b-row-major", "bf16-b-k-major", "fp8-precise", "fp8-fast"])
def test_swap_ab_tiles_match_float64(operands):
    # B's columns as the MMAs' rows (64-192 per tile), A's rows as their N (16-256): every edge of both, K of one block
    # and odd block counts, one to three consumers; fresh data and a poisoned output per call, row-wise scales too
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    fp8_ops = operands.startswith("fp8")
    tiles = ((64, 256, 4), (192, 64, 4), (128, 16, 6), (64, 32, 6), (128, 128, 4))  # block_n, block_m, stages
    for m, n, k in ((1, 16, 16), (16, 4096, 2368), (129, 1000, 528), (200, 272, 208), (1024, 2112, 1152)):
        for i, (block_n, block_m, stages) in enumerate(tiles):
            c = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
            if fp8_ops:
                a, b, sa, sb = _quantized(m, n, k, i % 2 == 1)
                ref = (a.double() * sa.double()) @ (b.double() * sb.double())
                wgmma.run(a, b, c, block_n, 128, stages, sms, sa, sb, promote=operands == "fp8-precise",
                          block_m=block_m, swap=True)
            else:
                a = torch.randn(m, k, device="cuda", dtype=BF16)
                b = (torch.randn(n, k, device="cuda", dtype=BF16).t() if operands == "bf16-b-k-major" else
                     torch.randn(k, n, device="cuda", dtype=BF16))
                ref = a.double() @ b.double()
                wgmma.run(a, b, c, block_n, 64, stages, sms, block_m=block_m, swap=True)
            err = ((c.double() - ref).norm() / ref.norm()).item()
            assert err < (2e-2 if operands == "fp8-fast" else 5e-3), (m, n, k, block_n, block_m, err)


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("operands", ["bf16-b-row-major", "bf16-b-k-major", "fp8-precise", "fp8-fast"])
def test_split_k_tiles_match_float64(operands):
    # each tile's K in slices (uneven ones, more asked than there are blocks, one block), fp32 partials added by a
    # second kernel: non-swapped and swapped tiles, one to three consumers, every edge; a poisoned output and fresh
    # data per call, all calls checked after the last (the partials buffer is reused call after call)
    from fused_ops import Config, matmul

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    fp8_ops = operands.startswith("fp8")
    bk = 128 if fp8_ops else 64
    tiles = ((128, 64, 6, False, 4), (192, 64, 4, False, 3), (128, 128, 4, False, 64), (256, 64, 4, True, 2),
             (16, 64, 6, True, 5), (128, 128, 4, True, 7))  # block_m, block_n, stages, swap, split_k
    calls = []
    for m, n, k in ((129, 1000, 1040), (200, 272, 208), (1, 48, 64), (128, 128, 8192), (17, 4096, 2368)):
        for i, (block_m, block_n, stages, swap, split) in enumerate(tiles):
            c = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
            a, b, sa, sb, ref = _operands(operands, m, n, k, i % 2 == 1)
            if not fp8_ops and block_m == 128 and not swap:  # through matmul's own door: a caller's split_k
                matmul(a, b, out=c, kernel="wgmma", config=Config(block_m=block_m, block_n=block_n, block_k=bk,
                                                                  num_stages=stages, split_k=split))
            else:
                wgmma.run(a, b, c, block_n, bk, stages, sms, sa, sb, promote=operands == "fp8-precise",
                          block_m=block_m, swap=swap, split_k=split)
            calls.append(((m, n, k, block_m, block_n, swap, split), c, ref))
    _check_all(calls, operands)


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("b_t", [False, True], ids=["b-row-major", "b-k-major"])
def test_swap_rem_tiles_match_float64(b_t):
    # swapped tiles block_m + rem rows of A wide (a second MMA of N = rem): rows just past 128 (the second box moved
    # inside), exactly 144, fewer than the tile; one to three consumers, whole and in slices of K; 96-row tiles
    # (64 + 32) over many rows of tiles, the last one partial; a poisoned output and fresh data per call, all calls
    # checked after the last
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    calls = []
    for m, n, k, block_n, rem, split, block_m in (
            (129, 4096, 1024, 64, 16, 1, 128), (140, 1000, 2048, 64, 16, 2, 128), (144, 384, 4160, 128, 16, 3, 128),
            (150, 520, 1024, 64, 32, 1, 128), (160, 4096, 512, 192, 32, 2, 128), (100, 256, 640, 64, 8, 1, 128),
            (130, 272, 8192, 128, 64, 4, 128), (1000, 1536, 512, 128, 32, 1, 64), (1024, 2304, 384, 192, 32, 1, 64),
            (300, 520, 1024, 64, 32, 2, 64)):
        a = torch.randn(m, k, device="cuda", dtype=BF16)
        b = torch.randn(n, k, device="cuda", dtype=BF16).t() if b_t else torch.randn(k, n, device="cuda", dtype=BF16)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
        stages = 6 if block_n == 64 else 4
        while not wgmma.fits(block_n, 64, stages, 2, 4 if split > 1 else 2, block_m, rem):
            stages -= 1
        wgmma.run(a, b, c, block_n, 64, stages, sms, block_m=block_m, swap=True, split_k=split, rem=rem)
        calls.append(((m, n, k, block_n, rem, split, block_m), c, a.double() @ b.double()))
    for case, c, ref in calls:
        err = ((c.double() - ref).norm() / ref.norm()).item()
        assert err < 5e-3, (case, err)


def test_promotion_in_pairs_is_refused_where_a_third_sum_would_not_fit():
    # promote="pairs": each consumer keeps two blocks' sums beside its total, so at most 128 rows, at most 16 more
    # columns (rem), no turns
    a, b = torch.empty(300, 256, dtype=FP8), torch.empty(1000, 256, dtype=FP8).t()
    c = torch.empty(300, 1000, dtype=BF16)
    assert wgmma.kernel_args(a, b, c, 128, 128, 4, 128, promote="pairs")[1]["PROMOTE"] == 2
    assert wgmma.kernel_args(a, b, c, 128, 128, 4, 64, promote="pairs")[1]["PROMOTE"] == 2
    assert wgmma.kernel_args(a, b, c, 128, 128, 4, 128, promote="pairs", rem=16)[1]["PROMOTE"] == 2
    assert wgmma.kernel_args(a, b, c, 128, 128, 4, 128, promote=True)[1]["PROMOTE"] == 1
    for kw in (dict(block_m=192), dict(rem=32), dict(block_m=64, turns=True)):
        with pytest.raises(ValueError, match=r"promote='pairs' .*expected block_m of at most 128, rem of at most 16 "):
            wgmma.kernel_args(a, b, c, 128, 128, 4, promote="pairs", **kw)


def test_edge_boxes_stay_past_the_edge_where_moving_them_would_misalign_tma():
    # TMA faults (illegal instruction) on an innermost coordinate not 16 bytes into the row; inside() moves an edge box
    # to extent - size, so it moves only where the extents of the innermost dimensions it shifts are 16-byte
    # multiples: columns of a row-major B and C, rows where the swapped kernel sees B and C transposed
    def inside(m, n, pad, swap=False):
        a = torch.empty(m, 512, dtype=BF16)
        b = torch.empty(512, n + pad, dtype=BF16)[:, :n]  # rows 16-byte aligned (TMA describes them), n columns
        c = torch.empty(m, n + pad, dtype=BF16)[:, :n]
        block_m = 32 if swap else 128
        return wgmma.kernel_args(a, b, c, 128, 64, 4, block_m, swap)[1]["INSIDE"]
    assert inside(333, 776, 0) and inside(16, 776, 0, swap=True)
    assert not inside(333, 777, 7)  # B's and C's column origin 777 - 128
    assert not inside(16, 777, 7, swap=True)  # the swapped kernel's rows are B's columns
    assert inside(333, 784, 0) and inside(300, 1000, 8)  # rows of any count (not innermost unswapped)


def test_288_wide_64_row_tiles_only_on_k_major_b_in_one_wave_of_whole_columns():
    # config.WGMMA_ROW64_KMAJOR_TILES: 1024x2304 (8 x 288) from K of 3584 on K-major B; row-major B, shorter K, a
    # width no multiple of 288 and 2048 rows keep their picks
    from benchmarks.gemm_picks import pick
    def tile(m, n, k, k_major):
        kernel, cfg = pick(m, n, k, "bf16", b_k_major=k_major)
        return kernel, cfg.block_m, cfg.block_n + (cfg.rem_cols or 0)
    assert tile(1024, 2304, 3584, True) == tile(1024, 2304, 16384, True) == ("wgmma", 64, 288)
    assert tile(1024, 2304, 3584, False) == tile(1024, 2304, 2944, True) == ("wgmma", 64, 320)
    assert tile(2048, 2304, 4096, True) != ("wgmma", 64, 288)
    assert tile(1024, 2560, 3584, True) == ("wgmma", 64, 320)
    assert tile(1024, 2240, 3584, True)[2] != 288  # 2240 = 7.8 x 288
    assert tile(128, 19008, 3584, True) == tile(128, 19008, 3584, False) == ("wgmma", 128, 160)  # 66 x 288: untimed


def test_defaults_promote_in_pairs_on_whole_128x128_precise_tiles_only(monkeypatch):
    # config.precise_promotion through local_gemm.launch: the picks' promote as wgmma.run receives it
    from benchmarks.gemm_picks import pick
    from fused_ops import local_gemm
    seen = []
    monkeypatch.setattr(local_gemm.wgmma, "run", lambda *args, promote, **kw: seen.append(promote))
    for (m, n, k), mode, want in (((1024, 3584, 4736), "fp8", "pairs"),     # 128x128, whole
                                  ((1024, 3584, 4736), "fp8 fast", False),
                                  ((1024, 6912, 5120), "fp8", True),        # 128x128 + 16 columns
                                  ((4096, 8192, 8192), "fp8", True),        # 192x128
                                  ((128, 9472, 3584), "fp8", True)):        # 64x144, in turns
        kernel, cfg = pick(m, n, k, mode)
        assert kernel == "wgmma", (m, n, k, mode)
        a, b = torch.empty(m, k, dtype=FP8), torch.empty(n, k, dtype=FP8).t()
        local_gemm.launch(a, b, torch.empty(m, n, dtype=BF16), cfg, 2, kernel, promote=mode == "fp8")
        assert seen.pop() == want, ((m, n, k), mode, cfg.describe())
    cfg = pick(1024, 3584, 4736, "fp8")[1]
    for other in (dict(split_k=2), dict(swap_ab=True), dict(block_n=64)):
        assert C.precise_promotion(dataclasses.replace(cfg, **other)) is True, other


def test_fp8_precise_128x128_tiles_in_pairs_cost_less_from_129_to_1024_rows(monkeypatch):
    # config.FP8_PAIRS_COST: at 1024 rows they displace 192x128 and 128x144-160 tiles; not at 128 rows (one row of
    # tiles keeps its wider ones), not at 4096 (192-row tiles fill their rows), not with fast accumulation
    from benchmarks.gemm_picks import pick

    def tile(m, n, k, mode="fp8"):
        cfg = pick(m, n, k, mode)[1]
        return cfg.block_m, cfg.block_n + (cfg.rem_cols or 0), C.precise_promotion(cfg)
    # (and 128x192 ones, one wide MMA a k step, displace both from K of FP8_WIDE_192_MIN_K in FP8_WIDE_192_MIN_WAVES)
    assert tile(1024, 19008, 5120) == tile(1024, 7168, 4096) == tile(1024, 9216, 16384) == (128, 128, "pairs")
    assert tile(1024, 53248, 16384) == tile(4096, 19008, 5120) == (128, 192, True)
    assert tile(128, 76032, 5120) == (128, 144, True)
    assert tile(4096, 7168, 4096) == (192, 128, True)
    assert tile(1024, 19008, 5120, "fp8 fast")[:2] != (128, 128)
    monkeypatch.setattr(C, "FP8_WIDE_192_MIN_K", 1 << 30)  # the picks before 128x192 tiles in many waves
    assert tile(1024, 53248, 16384) == (128, 128, "pairs") and tile(4096, 19008, 5120) == (192, 128, True)
    monkeypatch.setattr(C, "FP8_PAIRS_ROWS", (0, 0))  # ... and before pairs
    assert tile(1024, 19008, 5120) == (192, 128, True) and tile(1024, 7168, 4096) == (128, 160, True)


def test_stages_past_shared_memory_are_refused_on_the_host_with_the_bytes():
    # the ring and C's staging tiles (fp32 where slices of K stage partials) against SMEM_BYTES, before a launch
    a, b = torch.empty(256, 4608, dtype=FP8), torch.empty(1024, 4608, dtype=FP8).t()
    c = torch.empty(256, 1024, dtype=BF16)
    wgmma.kernel_args(a, b, c, 128, 128, 6, 128)  # 192 KiB of ring + 32 KiB of bf16 staging
    wgmma.kernel_args(a, b, c, 128, 128, 5, 128, split_k=3)
    with pytest.raises(ValueError, match=r"6 stages of 128x128x128 tiles \(rem=0, 3 slices of K\) need 262144 bytes"):
        wgmma.kernel_args(a, b, c, 128, 128, 6, 128, split_k=3)
    with pytest.raises(ValueError, match=r"expected at most 231424: fewer stages or a smaller block_k"):
        wgmma.kernel_args(a, b, c, 128, 128, 7, 128)


def test_rem_widths_the_kernel_has_none_of_are_refused_and_units_count_the_wider_tiles():
    a, b, c = torch.empty(300, 64, dtype=BF16), torch.empty(64, 1000, dtype=BF16), torch.empty(300, 1000, dtype=BF16)
    with pytest.raises(ValueError, match=r"rem=20; expected 0, one of \(8, 16, 32, 64\), or \(one wide MMA\) a sum"):
        wgmma.kernel_args(a, b, c, 64, 64, 4, 128, swap=True, rem=20)
    # sums of them (24, 96) only as one wide MMA: not on row-major B, nor on four consumers
    with pytest.raises(ValueError, match=r"rem=24, no power of two: such tiles run only as one MMA 88 wide .* A "
                                         r"K-major, B N-major, consumers: 1"):
        wgmma.kernel_args(a, b, c, 64, 64, 4, 64, rem=24)
    f8a, f8b, f8c = torch.empty(300, 128, dtype=FP8), torch.empty(1000, 128, dtype=FP8).t(), c
    with pytest.raises(ValueError, match=r"rem=96, no power of two: .* consumers: 4"):
        wgmma.kernel_args(f8a, f8b, f8c, 128, 128, 2, 256, rem=96)
    assert wgmma.kernel_args(f8a, f8b, f8c, 128, 128, 3, 128, rem=96)[1]["WIDE"]  # 224 wide, two consumers
    with pytest.raises(ValueError, match=r"FP8 precise accumulation on tiles 128 \+ 96 wide; expected at most 192"):
        wgmma.kernel_args(f8a, f8b, f8c, 128, 128, 3, 128, promote=True, rem=96)
    with pytest.raises(ValueError, match=r"FP8 precise accumulation with block_m=256; expected at most 192"):
        wgmma.kernel_args(a.to(FP8), b.t().contiguous().t().to(FP8), c, 128, 128, 3, 256, promote=True, rem=32)
    with pytest.raises(ValueError, match=r"stages=1; expected at least 2"):
        wgmma.kernel_args(a, b, c, 128, 64, 1, 256, split_k=2, rem=32)  # what fp32 staging would leave at 64 deep
    with pytest.raises(ValueError, match=r"rem=32 past a tile 16 rows of A wide; expected at most 16"):
        wgmma.kernel_args(a, b, c, 64, 64, 4, 16, swap=True, rem=32)  # REM's part is staged in the first part's tile
    assert wgmma.kernel_args(a, b, c, 128, 64, 4, 128, rem=32)[2] == 3 * 7  # 160-wide tiles: 7 along N = 1000
    assert wgmma.kernel_args(a, b, c, 128, 64, 3, 256, rem=32)[2] == 2 * 7  # four consumers: 256 rows
    assert wgmma.kernel_args(a, b, c, 64, 64, 4, 128, swap=True, rem=32)[2] == 2 * 16  # 160 rows of A: 2 along M
    # split-K's partials: whole tiles, and sum_slices' whole blocks of columns (it loads them unmasked)
    _, _, units, partials = wgmma.kernel_args(a, b[:, :130], c[:, :130], 128, 16, 4, 128, split_k=2, rem=16)
    assert units == 3 * 1 * 2 and partials.shape == (2, 384, 192)


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("operands,wide", [("bf16-b-row-major", True),
                                           ("bf16-b-k-major", True), ("bf16-b-k-major", False), ("fp8-precise", True),
                                           ("fp8-precise", False), ("fp8-fast", True), ("fp8-fast", False)])
def test_rem_cols_tiles_match_float64(operands, wide, monkeypatch):
    # tiles block_n + rem columns of B wide (on K-major operands one MMA that wide, from inline PTX: fused_ops/
    # wide_mma, also where rem is a sum of powers of two, 96 or 48; wide=False, or B row-major: a second MMA of
    # N = rem): N past a tile's first part, inside it, exactly whole tiles and fewer than one; one to four
    # consumers, whole and in slices of K, per-tensor and row-wise scales; a poisoned output and fresh data per call,
    # all calls checked after the last; the 160-wide one also through matmul's / scaled_mm's own door with a
    # caller's Config
    from fused_ops import Config, fp8, matmul

    monkeypatch.setattr(wgmma, "WIDE_MMA", bool(wide))
    ran_wide = 0
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    fp8_ops = operands.startswith("fp8")
    bk = 128 if fp8_ops else 64
    calls = []
    cases = ((1024, 2560, 2880, 128, 128, 32, 1), (300, 2112, 1040, 128, 128, 16, 1),
             (129, 1000, 2048, 192, 128, 32, 2), (64, 152, 640, 128, 128, 8, 1), (500, 1280, 576, 128, 256, 64, 1),
             (200, 96, 4096, 128, 64, 32, 3), (1024, 2880, 1008, 128, 128, 64, 1), (300, 1440, 640, 128, 64, 32, 1),
             (1024, 1152, 1008, 256, 128, 16, 1), (128, 4608, 1024, 64, 64, 8, 1), (200, 1000, 640, 64, 128, 16, 1),
             (128, 960, 2048, 64, 64, 16, 2),
             # widths that are sums of powers of two (one wide MMA only): 224, 112
             (1024, 3584, 896, 128, 128, 96, 1), (300, 1000, 640, 128, 64, 48, 1), (200, 3584, 2048, 192, 64, 48, 2),
             (129, 232, 1024, 128, 128, 96, 1))
    for m, n, k, block_m, block_n, rem, split in cases:  # ... block_m, block_n, rem, split_k
        if rem not in wgmma.REMS and (wide is not True or operands == "bf16-b-row-major") or \
                operands == "fp8-precise" and block_n + rem > wgmma.PROMOTE_MAX_WIDTH:
            continue  # refused (test_rem_widths_the_kernel_has_none_of_are_refused_...)
        if operands == "fp8-precise" and block_n == 256:
            block_n = 128  # precise accumulation keeps a block's sum beside the total: 64x320 of each would spill
        if operands == "fp8-precise" and block_m == 256:
            continue  # refused: its second accumulator would spill (test_rem_widths_the_kernel_has_none_of_...)
        stages = 4
        while not wgmma.fits(block_n, bk, stages, 1 if fp8_ops else 2, 4 if split > 1 else 2, block_m, rem):
            stages -= 1
        c = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
        cfg = Config(block_m=block_m, block_n=block_n, block_k=bk, num_stages=stages, split_k=split, rem_cols=rem)
        a, b, sa, sb, ref = _operands(operands, m, n, k, split != 1 or m == 300)
        ran_wide += wgmma.kernel_args(a, b, c, block_n, bk, stages, block_m, promote=operands == "fp8-precise",
                                      split_k=split, rem=rem)[1]["WIDE"]
        if (block_m, block_n, rem) == (128, 128, 32) and fp8_ops:  # through the front doors, a caller's Config
            fp8.scaled_mm(a, b, sa, sb, out=c, config=cfg, use_fast_accum=operands == "fp8-fast")
        elif (block_m, block_n, rem) == (128, 128, 32):
            matmul(a, b, out=c, config=cfg)
        else:
            wgmma.run(a, b, c, block_n, bk, stages, sms, sa, sb, promote=operands == "fp8-precise",
                      block_m=block_m, split_k=split, rem=rem)
        calls.append(((m, n, k, block_m, block_n, rem, split), c, ref))
    _check_all(calls, operands)
    assert (ran_wide > 0) == (wide and operands != "bf16-b-row-major"), ran_wide  # the form ran


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
def test_split_k_partials_first_made_inside_a_cuda_graph():
    # a split-K shape whose partials buffer is first needed while a CUDA graph captures: the graph owns that one
    # (not kept for later calls), replays add fresh inputs correctly, and an eager call after it makes its own
    from fused_ops import matmul

    def operands(m, n, k):
        return torch.randn(m, k, device="cuda", dtype=BF16), torch.randn(k, n, device="cuda", dtype=BF16)
    a, b = operands(104, 1216, 8192)  # compiles the kernels eagerly: 19 swapped tiles in 6 slices
    ref = a.double() @ b.double()
    assert ((matmul(a, b).double() - ref).norm() / ref.norm()).item() < 5e-3
    a, b = operands(104, 1280, 8192)  # 20 tiles in 6 slices: the same kernels, partials of another size
    out = torch.empty(104, 1280, device="cuda", dtype=BF16)
    key = (out.device, 6 * 128 * 1280)  # slices x C's rows and columns padded to whole tiles
    wgmma._partials.pop(key, None)  # as if no call had needed it yet
    before = dict(wgmma._partials)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        matmul(a, b, out=out)
    torch.cuda.current_stream().wait_stream(stream)
    assert wgmma._partials == before  # nothing of the graph's pool kept
    for _ in range(4):
        a.copy_(torch.randn_like(a))
        b.copy_(torch.randn_like(b))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ref = a.double() @ b.double()
        assert ((out.double() - ref).norm() / ref.norm()).item() < 5e-3
    eager = matmul(a, b)
    assert ((eager.double() - ref).norm() / ref.norm()).item() < 5e-3
    assert key in wgmma._partials and key not in before


def test_split_k_slices_each_hold_a_block_of_k():
    assert [wgmma.slices(65536, 64, s) for s in (1, 2, 3, 64, 66, 200)] == [1, 2, 3, 64, 64, 171]
    assert wgmma.slices(1024, 64, 64) == 16 and wgmma.slices(1024, 64, 7) == 6  # 16 blocks: 3 each, the last 1
    assert wgmma.slices(4096, 64, 2) == 2 and wgmma.slices(100, 64, 4) == 2 and wgmma.slices(64, 64, 8) == 1
    a, b, c = torch.empty(64, 64, dtype=BF16), torch.empty(64, 64, dtype=BF16), torch.empty(64, 64, dtype=BF16)
    with pytest.raises(ValueError, match="split_k=0; expected a positive integer"):
        wgmma.kernel_args(a, b, c, 64, 64, 4, 128, split_k=0)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1" and not ON_HOPPER, reason="the interpreter or a GPU")
@pytest.mark.parametrize("split, m, n, m_pad, n_pad", [(2, 129, 100, 192, 128), (5, 3, 16, 64, 64),
                                                       (64, 128, 128, 128, 128)])
def test_split_k_partials_add_up_into_c_of_any_row_stride(split, m, n, m_pad, n_pad):
    # the second kernel of split-K: each slice's padded fp32 partial of C's shape, summed into C (its pad unread:
    # NaN there would show), C a view with a longer row stride whose other columns stay as they were
    device = "cuda" if ON_HOPPER else "cpu"
    partials = torch.full((split, m_pad, n_pad), float("nan"), device=device)
    partials[:, :m, :n] = torch.randn(split, m, n, device=device)
    wide = torch.full((m, n + 24), 7.0, device=device, dtype=BF16)
    wgmma.sum_slices(partials, wide[:, :n])
    assert torch.allclose(wide[:, :n].float(), partials[:, :m, :n].sum(0), atol=1e-2, rtol=1e-2)
    assert (wide[:, n:] == 7).all()


def test_turns_are_refused_where_the_kernel_has_no_such_tile():
    # two consumers taking turns on K: 64-row tiles, not swapped, an even number of stages (each keeps to its own);
    # the fused ops' tile loop has no such tiles
    a, b, c = torch.empty(128, 256, dtype=BF16), torch.empty(256, 128, dtype=BF16), torch.empty(128, 128, dtype=BF16)
    assert wgmma.kernel_args(a, b, c, 64, 64, 6, 64, turns=True)[1]["TURNS"]
    with pytest.raises(ValueError, match="turns=True with block_m=128; expected block_m=64, not swapped"):
        wgmma.kernel_args(a, b, c, 64, 64, 6, 128, turns=True)
    with pytest.raises(ValueError, match="turns=True with swap=True; expected block_m=64, not swapped"):
        wgmma.kernel_args(a, b, c, 64, 64, 6, 64, swap=True, turns=True)
    with pytest.raises(ValueError, match="turns=True with stages=7; expected an even number"):
        wgmma.kernel_args(a, b, c, 64, 64, 7, 64, turns=True)
    assert not wgmma.fits(128, 128, 7, 1, 2, 64, 16, True) and wgmma.fits(128, 128, 7, 1, 2, 64, 16)  # the sums' room
    variant = __import__("fused_ops").registry.OPS["gemm_all_reduce"].variants["one_shot"]
    with pytest.raises(ValueError, match="config.turns=True: the Gluon kernel's tiles"):
        C.check(C.Config(block_m=64, block_n=64, block_k=64, group_m=8, gemm_sms=8, comm_sms=1, num_stages=2,
                         num_warps=4, split_k=1, split_tail=False, turns=True), None, variant)


def test_swap_ab_tiles_are_refused_where_the_kernel_has_no_such_tile():
    a, b, c = torch.empty(64, 64, dtype=BF16), torch.empty(64, 64, dtype=BF16), torch.empty(64, 64, dtype=BF16)
    with pytest.raises(ValueError, match=r"block_n=256; expected one of \(64, 128, 192\)"):
        wgmma.kernel_args(a, b, c, 256, 64, 4, 64, swap=True)
    with pytest.raises(ValueError, match="block_m=48 with swap; expected a power of two from 16 to 256"):
        wgmma.kernel_args(a, b, c, 64, 64, 4, 48, swap=True)
    with pytest.raises(ValueError, match=r"block_m=96; expected one of \(64, 128, 192, 256\)"):
        wgmma.kernel_args(a, b, c, 64, 64, 4, 96)


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("fast", [False, True], ids=["precise", "fast"])
def test_fp8_few_rows_run_swapped_tiles_by_default_and_match_float64(fast):
    # scaled_mm's own pick (no kernel, no config) at decode rows whose 16x64 swapped tiles fit in one wave, and at
    # 17-32 rows (32x64 tiles); 8 calls in a row each, fresh data and a poisoned output, per-tensor and row-wise
    # scales, checked after the last
    for m, n, k in ((1, 4000, 4096), (16, 3584, 2368), (7, 6912, 512), (32, 5120, 1024), (19, 14336, 512)):
        a, b, sa, sb = _quantized(m, n, k, False)
        c = torch.empty(m, n, device="cuda", dtype=BF16)
        cfg, _ = fp8.plan(a, b, None, fast)
        kernel, cfg = fp8.pick_kernel(a, b, c, cfg, None, fast, None)
        want = C.swapped_rows_tile(m, True)
        assert kernel == "wgmma" and cfg.swap_ab and _tile(cfg) == want[:3], (m, n, k, kernel, cfg)
        calls = []
        for i in range(8):
            a, b, sa, sb = _quantized(m, n, k, i % 2 == 1)
            out = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
            fp8.scaled_mm(a, b, sa, sb, out=out, use_fast_accum=fast)
            calls.append((a, b, sa, sb, out))
        for a, b, sa, sb, out in calls:
            ref = (a.double() * sa.double()) @ (b.double() * sb.double())
            err = ((out.double() - ref).norm() / ref.norm()).item()
            mine = torch._scaled_mm(a, b, sa, sb, out_dtype=BF16, use_fast_accum=fast)
            err_torch = ((mine.double() - ref).norm() / ref.norm()).item()
            assert err < max(1.5 * err_torch, 5e-3), (m, n, k, fast, err, err_torch)


def test_bf16_decode_rows_pick_swapped_tiles_in_one_wave_sliced_while_slices_keep_their_blocks():
    cfg = C.Config(block_m=16, block_n=64, block_k=128, group_m=8, gemm_sms=132, comm_sms=16, num_stages=6,
                   num_warps=4, tma=None, split_k=1, split_tail=False)
    for m, n, k, split in ((16, 3584, 4736, 2), (1, 2112, 7168, 4), (1, 3584, 2368, 1), (16, 2880, 1024, 1),
                           (1, 4608, 16384, 1), (16, 1536, 16384, 5)):
        pick = C.wgmma_config(cfg, m, n, 132, BF16, k=k)
        assert (_tile(pick), pick.num_stages, pick.swap_ab, pick.split_k) == (
            C.WGMMA_DECODE_TILE[:3], C.WGMMA_DECODE_TILE[3], True, split), (m, n, k, pick)
        assert -(-n // 64) * split <= 132  # one wave of units
    for m, n in ((16, 14336), (1, 19008)):  # more swapped tiles than SMs: the tile loop's programs (default_config)
        assert C.wgmma_config(cfg, m, n, 132, BF16, k=4096) is None
    # ... and where K has fewer than DECODE_SWAP_MIN_BLOCKS blocks or the tiles are fewer than DECODE_SWAP_MIN_TILES
    for m, n, k in ((16, 2880, 640), (1, 8192, 512), (16, 1472, 16384), (1, 256, 131072)):
        assert C.wgmma_config(cfg, m, n, 132, BF16, k=k) is None, (m, n, k)


# (m, n, k) whose default is a swapped Gluon tile, and that tile: decode rows where 16x64 tiles fit one wave (in
# slices of K or whole), 17-32 rows where 32x64 ones fit two
SWAPPED_ROWS = {"decode": (((16, 3584, 4736), (1, 2112, 7168), (7, 2880, 1024), (1, 4608, 16384), (16, 1536, 16384)),
                           C.WGMMA_DECODE_TILE),
                "17-32": (((32, 3584, 2368), (17, 4000, 1024), (32, 14336, 512)), C.WGMMA_ROWS_TILE)}


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("rows", list(SWAPPED_ROWS))
@pytest.mark.parametrize("b_t", [False, True], ids=["b-row-major", "b-k-major"])
def test_bf16_few_rows_run_swapped_tiles_by_default_and_match_float64(rows, b_t):
    import fused_ops
    from fused_ops import local_gemm

    shapes, tile = SWAPPED_ROWS[rows]
    for m, n, k in shapes:
        calls = []
        for i in range(6):  # fresh data, poisoned outputs, checked after the last call (slices' partials reused)
            a = torch.randn(m, k, device="cuda", dtype=BF16)
            b = (torch.randn(n, k, device="cuda", dtype=BF16).t() if b_t else
                 torch.randn(k, n, device="cuda", dtype=BF16))
            out = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
            if i == 0:
                cfg, _ = local_gemm.tile_loop_plan(a, b, None, lambda dev, m, n, k: local_gemm.defaults(
                    dev, m, n, k, BF16), "test")
                kernel, cfg = local_gemm.pick_kernel(a, b, out, cfg, None, False, None, "test")
                assert kernel == "wgmma" and cfg.swap_ab and _tile(cfg) == tile[:3], (m, n, k, cfg)
            fused_ops.matmul(a, b, out=out)
            calls.append((a, b, out))
        for a, b, out in calls:
            ref = a.double() @ b.double()
            assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2, (m, n, k)


def test_few_tiles_pick_the_gluon_kernels_split_k_and_edge_row_tiles(monkeypatch):
    # where the 128x128 tiles are too few for the SMs (k given): split-K at 33-128 rows while the tiles leave at
    # least FEW_TILES-fold SMs (bf16 swapped, 64 rows of A where K dominates; FP8 128x64 at 65-128 rows); bf16 at
    # 129-160 rows, swapped tiles 16 or 32 rows of A wider in slices filling the SMs where they are at most half of
    # them (FP8: a FEW_TILES-th; bf16 with the tile loop's edge boxes inside: in 3 slices or more); at 129-255 rows off
    # a multiple of 64 the tile loop (bf16, edge boxes inside) or whole 128x64 tiles that fill one wave (FP8, or bf16
    # with the tile loop's boxes past the edge)
    cfg = C.Config(block_m=64, block_n=64, block_k=128, group_m=8, gemm_sms=132, comm_sms=1, num_stages=4,
                   num_warps=4, tma=None, split_k=1, split_tail=False)

    def pick(m, n, k, dtype=BF16):
        got = C.wgmma_config(cfg, m, n, 132, dtype, k=k)
        return got and (_tile(got), got.swap_ab, got.split_k) + ((got.rem_rows,) if got.rem_rows else ())

    # FP8's 64-row tiles where they fill most of a wave come first (test_64_row_tiles_where_they_fill_most_of_a_wave)
    monkeypatch.setattr(C, "WGMMA_FP8_PRECISE_ROW64_TILES", ())

    assert pick(128, 1536, 8192) == ((128, 64, 64), True, 5)  # 24 tiles: 5 slices of 25-26 blocks
    assert pick(128, 1536, 8192, FP8) == ((128, 64, 128), False, 5)
    assert pick(128, 768, 4096, FP8) is None  # 32 blocks of K: the tile loop's 64x64x512 tiles
    assert pick(128, 128, 65536) == ((64, 64, 64), True, 33)  # 2 tiles of 128 rows: 4 of 64, 33 slices
    assert pick(64, 256, 131072) == ((64, 64, 64), True, 33)
    assert pick(64, 256, 131072, FP8) is None  # FP8 at 64 rows: the tile loop's 64-row tiles
    assert pick(128, 2560, 2880) is None  # 40 tiles, 15 blocks a slice: whole 64x64 tiles of the tile loop won
    assert pick(128, 2304, 3584) == ((128, 64, 64), True, 3)  # 36 tiles leave 3-fold SMs: thirds of 19 blocks
    assert pick(128, 4608, 16384) == ((128, 128, 64), True, 3)  # 72 tiles of 64 columns; 36 of 128 in thirds
    # FP8's thirds lost on an H100: whole 128x64 tiles where a row of A holds 12 KiB, as bf16's
    assert pick(128, 4608, 16384, FP8) == ((128, 64, 128), False, 1) == pick(128, 4608, 12288, FP8)
    for n, k in ((4608, 7168), (5120, 8192), (8192, 16384)):  # shorter K; 128 tiles
        assert pick(128, n, k, FP8) is None, (n, k)
    assert pick(128, 4608, 7168)[2] == 1  # thirds under 4096 deep: none (whole 128x64 tiles, below)
    assert pick(128, 8192, 16384) is None  # 64 tiles of 128 columns: no thirds
    for n, k in ((4608, 7168), (5120, 6912)):  # 72-80 whole 128x64 tiles at long K
        assert pick(128, n, k) == ((128, 64, 64), False, 1), (n, k)
    assert pick(128, 5120, 3456) is None  # short K
    for n, k in ((4096, 7168), (3584, 9472), (3072, 4096)):  # 96-128 64x64 tiles (WGMMA_ROW64_TILES)
        assert pick(128, n, k) == ((64, 64, 128), False, 1), (n, k)
    assert pick(128, 1536, 512) is None  # 8 blocks of K: nothing to split
    assert pick(140, 1024, 8192) == ((128, 64, 64), True, 8, 16)  # 16 tiles of 144 rows of A, 8 slices
    assert pick(150, 2048, 2048) == ((128, 64, 64), True, 4, 32)  # 32 tiles of 160 rows, 4 slices
    # with the tile loop's edge boxes inside A: its 64-row tiles where the swapped tiles make 2 slices, or whole
    # 128x64 or 128x96 tiles would fill one wave
    for m, n, k in ((129, 4096, 4096), (160, 4096, 4096), (129, 4096, 512), (161, 4096, 4096), (200, 4096, 4096),
                    (129, 5120, 5120), (129, 2880, 2880)):
        assert pick(m, n, k) is None, (m, n, k)
    monkeypatch.setattr(C, "EDGE_INSIDE", False)  # its boxes past the edge (FUSED_OPS_EDGE_INSIDE=0): those tiles
    assert pick(129, 4096, 4096) == ((128, 64, 64), True, 2, 16)  # 64 tiles of 144 rows of A, 2 slices
    assert pick(160, 4096, 4096) == ((128, 64, 64), True, 2, 32)
    assert pick(129, 4096, 512) == ((128, 64, 64), False, 1)  # 8 blocks of K: whole 128x64 tiles, edge rows inside
    assert pick(161, 4096, 4096) == ((128, 64, 64), False, 1)  # past 160 rows: the same
    assert pick(129, 5120, 5120) == ((128, 64, 64), False, 1) and C.wgmma_config(cfg, 129, 5120, 132, BF16,
                                                                                 k=5120).rem_cols == 32  # 128x96
    monkeypatch.setattr(C, "EDGE_INSIDE", True)
    assert pick(129, 4096, 4096, FP8) == ((128, 64, 128), False, 1)  # FP8's swapped wider tiles: only where few
    assert pick(140, 1024, 8192, FP8) == ((128, 64, 128), True, 8, 16)  # 16 tiles, 8 slices
    for m, n, k in ((256, 4096, 4096), (192, 1024, 4096), (1000, 1000, 1000)):
        assert pick(m, n, k) is None, (m, n, k)  # whole 64-row multiples, or tiles too few / too many for a wave
    assert pick(32, 128, 65536) == ((32, 64, 128), True, 64)  # 17-32 rows' swapped tiles, where few: slices too
    assert pick(16, 128, 65536, FP8) == ((16, 64, 256), True, 32)
    assert pick(32, 5120, 6912) == ((32, 64, 128), True, 1)
    assert C.wgmma_config(cfg, 128, 1536, 132, BF16) is None  # no k: no say on slices of K
    assert C.few_split(24, 132, 8192, 64) == 5 and C.few_split(40, 132, 8192, 64) == 1


def _default_calls(dtype, m, n, k, check_pick, fast=False, row_scales_too=False, calls=6, b_t=False):
    """[(output, float64 reference)] of `calls` calls through matmul's or scaled_mm's own pick (no kernel, no config),
    fresh data and a poisoned output each (FP8: row-wise scales every other call where row_scales_too; bf16 B K-major
    where b_t, as nn.Linear's weight.t()); check_pick(kernel, config) sees the first call's pick."""
    import fused_ops
    from fused_ops import local_gemm

    out = []
    for i in range(calls):
        if dtype == FP8:
            a, b, sa, sb = _quantized(m, n, k, row_scales_too and i % 2 == 1)
            ref = (a.double() * sa.double()) @ (b.double() * sb.double())
        else:
            a = torch.randn(m, k, device="cuda", dtype=BF16)
            b = torch.randn(n, k, device="cuda", dtype=BF16).t() if b_t else torch.randn(k, n, device="cuda",
                                                                                             dtype=BF16)
            ref = a.double() @ b.double()
        c = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
        if i == 0:
            if dtype == FP8:
                cfg, _ = fp8.plan(a, b, None, fast)
                check_pick(*fp8.pick_kernel(a, b, c, cfg, None, fast, None))
            else:
                cfg, _ = local_gemm.tile_loop_plan(a, b, None, lambda dev, m, n, k: local_gemm.defaults(
                    dev, m, n, k, BF16), "test")
                check_pick(*local_gemm.pick_kernel(a, b, c, cfg, None, False, None, "test"))
        if dtype == FP8:
            fp8.scaled_mm(a, b, sa, sb, out=c, use_fast_accum=fast)
        else:
            fused_ops.matmul(a, b, out=c)
        out.append((c, ref))
    return out


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("dtype", [BF16, FP8], ids=["bf16", "fp8"])
def test_few_tiles_run_split_k_by_default_and_match_float64(dtype):
    # matmul's and scaled_mm's own pick (no kernel, no config) where tiles are few: the Gluon kernel in slices of K,
    # swapped tiles 16 or 32 rows of A wider at 129-160 rows (FP8: where fewer), or whole 128x64 tiles with the
    # edge rows moved inside (FP8); 6 calls in a row each, fresh data and a poisoned output, checked after the last
    for m, n, k, split, rem in FEW_TILE_DEFAULTS["bf16" if dtype == BF16 else "fp8"]:
        def check(kernel, cfg):
            assert kernel == "wgmma" and cfg.split_k == split and (cfg.rem_rows or 0) == rem, (m, n, k, cfg)
        calls = _default_calls(dtype, m, n, k, check, row_scales_too=True)
        for out, ref in calls:
            err = ((out.double() - ref).norm() / ref.norm()).item()
            assert err < 5e-3, (m, n, k, err)


def test_every_default_tile_fits_shared_memory_with_the_stages_it_lists():
    # local_gemm._fit cuts stages that do not fit beside C's staging tiles without a word: a config list naming more
    # stages than run would misstate what was measured. Tiles that run in slices of K stage fp32 partials; precise
    # FP8's 64-row tiles keep the fp32 sums one consumer hands the other (turns)
    sliced = {"WGMMA_SPLIT_TILE", "WGMMA_FP8_SPLIT_TILE", "WGMMA_WIDE_SPLIT_TILE", "WGMMA_SPLIT_KDOM_TILE",
              "WGMMA_DECODE_TILE", "WGMMA_FP8_DECODE_TILE", "WGMMA_ROWS_TILE", "WGMMA_FP8_ROWS_TILE"}
    names = [n for n in dir(C) if n.startswith("WGMMA") and n.endswith(("_TILE", "_TILES"))
             and isinstance(getattr(C, n), tuple)]  # (WGMMA_KDOM_TILES: a count)
    checked = 0
    for name in names:
        value = getattr(C, name)
        for tile in (value if isinstance(value[0], tuple) else (value,)):
            rows, width, block_k, stages = tile[:4]
            base = 1 << (width.bit_length() - 1)  # a width between powers of two: base + rem (gluon_tile)
            in_bytes = 1 if "FP8" in name else 2
            out_bytes = 4 if name in sliced else 2
            turns = name == "WGMMA_FP8_PRECISE_ROW64_TILES"
            assert wgmma.fits(base, block_k, stages, in_bytes, out_bytes, rows, width - base, turns), (name, tile)
            checked += 1
    assert checked >= 40 and "WGMMA_ROW64_TILES" in names


def test_64_row_tiles_where_they_fill_most_of_a_wave():
    # WGMMA_ROW64_TILES: bf16 at 65-128 rows, 64x64 tiles 128 deep from 70% of the SMs to one wave, K of 4096 or more,
    # B's rows aligned, and 64x192 (from 80%) up to 1024 rows then 64x320 (from 95%; up to 4096 rows also two waves
    # where N is a multiple of 320, from K of 640), at K of 2880 or more; FP8 fast accumulation with per-tensor
    # scales at 65-1024 rows: 64x144 from 90%, else 64x80 from 85% at K of 6144 or more, else 64x160 or 64x192 from
    # 85% at K of 2880 or more; never row-wise, decode rows or two waves
    cfg = C.Config(block_m=64, block_n=64, block_k=128, group_m=8, gemm_sms=132, comm_sms=1, num_stages=4,
                   num_warps=4, tma=None, split_k=1, split_tail=False)

    def pick(m, n, k, dtype=BF16, **kw):
        got = C.wgmma_config(cfg, m, n, 132, dtype, k=k, **kw)
        return got and (_tile(got), got.num_stages, got.rem_cols) if got is not None and got.block_m == 64 else None

    for m, n, k in ((128, 3584, 5120), (128, 3456, 5120), (100, 4096, 7168), (128, 3584, 4096), (128, 3072, 5120)):
        assert pick(m, n, k) == ((64, 64, 128), 6, 0), (m, n, k)
    for m, n, k in ((128, 2816, 5120), (128, 4736, 5120), (128, 3584, 3584), (64, 3584, 5120), (256, 1792, 5120)):
        assert pick(m, n, k) is None, (m, n, k)  # 88 tiles, two waves, short K, 64 rows, 4 rows of tiles
    assert pick(128, 3584, 5120, b_aligned=False) is None
    for m, n, k in ((1024, 1536, 4096), (1024, 1280, 2880), (1000, 1280, 8192)):  # 112-128 tiles of 192
        assert pick(m, n, k) == ((64, 128, 64), 6, 64), (m, n, k)
    for m, n, k in ((1024, 2304, 3584), (1024, 2560, 2880), (1000, 2560, 8192), (1024, 2304, 4096)):
        assert pick(m, n, k) == ((64, 256, 64), 4, 64), (m, n, k)  # 128 tiles of 320 (the last of 2304 a fifth full)
    for m, n, k in ((4096, 640, 2880), (4096, 1280, 2880), (1024, 5120, 8192), (2048, 2560, 4096), (1024, 5120, 640),
                    (1024, 2560, 2048), (4096, 640, 2048)):
        assert pick(m, n, k) == ((64, 256, 64), 4, 64), (m, n, k)  # 320 wide, N a multiple: 128 or 256 tiles
    for m, n, k in ((1024, 1536, 2048), (1024, 2304, 2048), (1024, 3072, 4096), (2048, 1536, 4096), (8192, 640, 2880),
                    (4096, 2560, 4096), (4096, 640, 512), (2048, 2304, 4096), (4096, 1152, 3584)):
        # short K, two waves of 192, past 1024 rows (192) or 4096, 3 waves, two waves of 320 with N not a multiple
        assert pick(m, n, k) is None, (m, n, k)
    assert pick(1024, 2560, 2880, b_aligned=False) is None
    assert pick(1024, 1440, 2880, b_aligned=False) is None and pick(1024, 1280, 2880, b_aligned=False) is None
    # FP8 where B's rows (K-major) are off 128 bytes: up to 160 wide (ROW64_FP8_UNALIGNED_WIDTH)
    assert pick(1024, 1280, 2880, FP8, b_aligned=False) == ((64, 128, 128), 6, 32)
    assert pick(1024, 1280, 2880, FP8, fast=True, b_aligned=False) == ((64, 128, 128), 7, 32)
    assert pick(1024, 1440, 2880, FP8, b_aligned=False) is None  # 128 tiles of 192
    assert pick(1024, 1152, 3584, FP8, fast=True) == ((64, 128, 128), 8, 16)  # 128 tiles of 144
    assert pick(128, 9472, 3584, FP8, fast=True) == ((64, 128, 128), 8, 16)  # 132
    assert pick(128, 4608, 7168, FP8, fast=True) == ((64, 64, 128), 12, 16)  # 116 tiles of 80
    assert pick(1024, 1280, 8192, FP8, fast=True) == ((64, 128, 128), 7, 32)  # 128 tiles of 160
    assert pick(1024, 1536, 4096, FP8, fast=True) == ((64, 128, 128), 6, 64)  # 128 tiles of 192
    for m, n, k in ((128, 4608, 3584), (128, 8192, 3696), (16, 9216, 16384), (128, 14784, 8192),
                    (1024, 1536, 2048)):
        assert pick(m, n, k, FP8, fast=True) is None, (m, n, k)  # short K, 114 of 144, decode rows, two waves
    # precise: the same tiles, two consumers taking turns on K; 80 wide from K of 3072 (WGMMA_FP8_PRECISE_ROW64_TILES)
    assert pick(1024, 1152, 3584, FP8) == ((64, 128, 128), 6, 16) and pick(128, 4608, 3584, FP8) == ((64, 64, 128),
                                                                                                      10, 16)
    assert pick(1024, 1280, 8192, FP8) == ((64, 128, 128), 6, 32) and pick(1024, 1536, 4096, FP8) == (
        (64, 128, 128), 4, 64)
    assert C.wgmma_config(cfg, 128, 4608, 132, FP8, k=3584).turns
    assert C.wgmma_config(cfg, 1024, 1536, 132, FP8, k=4096).turns
    assert pick(128, 4608, 2560, FP8) is None and pick(1024, 1152, 3584, FP8, fast=True, row_scales=True) is None


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("dtype,fast", [(BF16, False), (FP8, True), (FP8, False)], ids=["bf16", "fp8-fast", "fp8"])
def test_64_row_tiles_run_by_default_and_match_float64(dtype, fast):
    # matmul's and scaled_mm's own pick where 64-row tiles fill most of a wave (bf16 64, 192, 320 wide, FP8 80 to 192;
    # precise: two consumers taking turns on K): 6 calls in a row each, fresh data and a poisoned output, checked after
    # the last
    for m, n, k, width, rem in ROW64_DEFAULTS["bf16" if dtype == BF16 else "fp8"]:
        def check(kernel, cfg):
            assert (kernel, cfg.block_m, cfg.block_n, cfg.rem_cols or 0, bool(cfg.turns)) == (
                "wgmma", 64, width, rem, dtype == FP8 and not fast), cfg
        calls = _default_calls(dtype, m, n, k, check, fast)
        for out, ref in calls:
            err = ((out.double() - ref).norm() / ref.norm()).item()
            assert err < (2e-2 if dtype == FP8 else 5e-3), (m, n, k, err)


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
def test_64_row_tiles_on_k_major_weights_run_by_default_and_match_float64():
    # bf16 B K-major (nn.Linear's weight.t()): the 128-deep 64x64 tiles and the 64x192 and 64x320 ones through
    # matmul's own pick, each stage's 256-byte rows of both operands in two TMA boxes; 6 calls in a row, poisoned
    # outputs
    for m, n, k, width, rem in ROW64_K_MAJOR_DEFAULTS:
        def check(kernel, cfg):
            assert (kernel, cfg.block_m, cfg.block_n, cfg.rem_cols or 0) == ("wgmma", 64, width, rem), cfg
        for out, ref in _default_calls(BF16, m, n, k, check, b_t=True):
            err = ((out.double() - ref).norm() / ref.norm()).item()
            assert err < 5e-3, (m, n, k, err)


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("operands", ["bf16-b-row-major", "fp8-precise", "fp8-fast"])
def test_turns_tiles_match_float64(operands):
    # two consumers taking turns on a 64-row tile's blocks of K (wgmma.run(turns=True)): K of one block (the second
    # consumer hands over zeros), odd and even block counts, edge rows and columns, rem widths, slices of K, more tiles
    # than programs (the handoff's phases over many tiles); a poisoned output and fresh data per call, all calls
    # checked after the last
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    fp8_ops = operands.startswith("fp8")
    bk = 128 if fp8_ops else 64
    calls = []
    cases = ((128, 4608, 7168, 64, 16, 1), (100, 1000, bk, 128, 0, 1), (64, 640, 3 * bk, 64, 8, 1),
             (1000, 1152, 2048, 128, 16, 1), (128, 960, 8 * bk, 64, 16, 3), (300, 3000, 640, 128, 0, 1),
             (128, 14720, 8192, 128, 0, 1), (256, 8192, 9 * bk, 128, 16, 1))  # 230-256 tiles: 1-2 per program
    for m, n, k, block_n, rem, split in cases:
        stages = 12
        while not wgmma.fits(block_n, bk, stages, 1 if fp8_ops else 2, 4 if split > 1 else 2, 64, rem, True) or (
                stages % 2):
            stages -= 1
        for _ in range(2):
            c = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
            a, b, sa, sb, ref = _operands(operands, m, n, k, m == 300)
            wgmma.run(a, b, c, block_n, bk, stages, sms, sa, sb, promote=operands == "fp8-precise", block_m=64,
                      split_k=split, rem=rem, turns=True)
            calls.append(((m, n, k, block_n, rem, split), c, ref))
    _check_all(calls, operands)
    with pytest.raises(ValueError, match="turns=True with block_m=128; expected block_m=64"):
        wgmma.run(a, b, c, 64, bk, 4, sms, sa, sb, block_m=128, turns=True)
    with pytest.raises(ValueError, match="turns=True with stages=5; expected an even number"):
        wgmma.run(a, b, c, 64, bk, 5, sms, sa, sb, block_m=64, turns=True)


def test_a_triton_the_gpu_tests_never_ran_under_is_named_once(monkeypatch):
    """Under a Triton whose build of the kernel only compile-checks here, the first run says so, once."""
    import warnings

    import triton
    monkeypatch.setattr(wgmma, "_noted", [])
    monkeypatch.setattr(triton, "__version__", wgmma.GPU_VALIDATED_TRITON[0] + ".0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wgmma._note_untested_triton()  # a validated version: silent
    monkeypatch.setattr(triton, "__version__", "9.9.0")
    with pytest.warns(RuntimeWarning, match=r"Triton 9\.9\.0 .*tests/test_wgmma\.py.*kernel='tile_loop'"):
        wgmma._note_untested_triton()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wgmma._note_untested_triton()  # once per process
