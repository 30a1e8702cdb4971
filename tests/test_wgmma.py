"""The Gluon GEMM of fused_ops/wgmma.py (FP8 scaled_mm's kernel on Hopper). On the CPU: compiled for sm_90 with
Triton's ptxas (no GPU needed): every default tile fits shared memory without register spills, and precise
accumulation keeps one MMA group in flight (the point of the kernel); scaled_mm's kernel choice and refusals. On a
Hopper GPU: edge shapes in FP8 (precise and fast, per-tensor and row-wise scales) and bf16 (B row-major and K-major)
against float64, poisoned outputs, many calls in a row with fresh data."""

import dataclasses
import os
import re
import subprocess
import tempfile

import pytest
import torch

from fused_ops import config as C
from fused_ops import fp8, wgmma

pytestmark = pytest.mark.skipif(not wgmma.available(), reason="this Triton has no Gluon Hopper API (Triton < 3.5)")

ON_HOPPER = (torch.cuda.is_available() and __import__("iris").BACKEND == "cuda"
             and torch.cuda.get_device_capability()[0] == 9)


def compile_sm90(dtype, out_dtype, tile, promote, scales, b_t):
    """(PTX, shared bytes, ptxas's report) of wgmma_gemm_kernel for sm_90a, compiled here without a GPU."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    bm, bn, bk, stages, warps = tile

    def desc(t, block):
        layout = gl.NVMMASharedLayout.get_default_for(block, getattr(gl, wgmma._GL_DTYPES[t.dtype]))
        return mangle_type(wgmma.TensorDescriptor.from_tensor(t, block, layout))
    a, c = torch.empty(256, 256, dtype=dtype), torch.empty(256, 256, dtype=out_dtype)
    fn = wgmma.wgmma_gemm_kernel
    consts = dict(GROUP_M=8, NUM_BUFFERS=stages, B_T=b_t, SCALES=scales, PROMOTE=promote, num_warps=warps)
    sig = {"a_desc": desc(a, [bm, bk]), "b_desc": desc(a, [bn, bk] if b_t else [bk, bn]), "c_desc": desc(c, [bm, bn]),
           "SA": "*fp32", "SB": "*fp32", "M": "i32", "N": "i32", "K": "i32", **{k: "constexpr" for k in consts}}
    src = GluonASTSource(fn=fn, signature=sig, constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()},
                         attrs={})
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    ptxas = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.ptx")
        with open(path, "w") as f:
            f.write(kernel.asm["ptx"])
        report = subprocess.run([ptxas, "-arch=sm_90a", "-v", path, "-o", os.path.join(d, "k.cubin")],
                                capture_output=True, text=True, check=True).stderr
    return kernel.asm["ptx"], kernel.metadata.shared, report


FP8, BF16 = torch.float8_e4m3fn, torch.bfloat16


@pytest.mark.parametrize("dtype, tile, promote, scales, b_t", [
    (FP8, C.WGMMA_FP8_PRECISE_TILE, True, 1, True),
    (FP8, C.WGMMA_FP8_PRECISE_TILE, True, 2, True),
    (FP8, C.WGMMA_FP8_FAST_TILE, False, 1, True),
    (BF16, (128, 256, 64, 3, 8), False, 0, False),
], ids=["fp8-precise-tensor", "fp8-precise-row", "fp8-fast", "bf16"])
def test_default_tiles_compile_for_sm90_without_spills(dtype, tile, promote, scales, b_t):
    ptx, shared, report = compile_sm90(dtype, BF16, tile, promote, scales, b_t)
    assert shared <= wgmma.SMEM_BYTES + 1024, shared
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report), report
    bm, bn, bk, stages, warps = tile
    assert wgmma.fits(bm, bn, bk, stages, dtype.itemsize, 2)
    waits = re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+)", ptx)
    # the main loop leaves one MMA group in flight; the only full wait is the tile's last (before its epilogue)
    assert waits.count("0") == 1 and waits.count("1") >= 1, waits
    if promote:  # two partial sums alternate: blocks issue into two different register sets
        sets = {m.group(1).split(",")[0] for m in re.finditer(r"wgmma\.mma_async[^{]*\{([^}]*)\}", ptx)}
        assert len(sets) == 2, sets


def test_scaled_mm_picks_the_tile_loop_where_wgmma_cannot_run_and_says_why():
    a = (torch.randn(64, 64) / 8).to(FP8)
    b = (torch.randn(32, 64) / 8).to(FP8).t()
    c = torch.empty(64, 32, dtype=BF16)
    cfg = C.Config(block_m=128, block_n=128, block_k=128, group_m=8, gemm_sms=132, comm_sms=1, num_stages=4,
                   num_warps=8, tma=None, split_k=1, split_tail=False)
    assert not wgmma.supports(a, b, c)  # CPU tensors
    assert fp8.pick_kernel(a, b, c, cfg, None, False, None) == ("tile_loop", cfg)
    with pytest.raises(ValueError, match="kernel='wgmma' needs a Hopper GPU"):
        fp8.pick_kernel(a, b, c, cfg, None, False, "wgmma")
    with pytest.raises(ValueError, match="expected None .* 'wgmma' or 'tile_loop'"):
        fp8.pick_kernel(a, b, c, cfg, None, False, "cutlass")
    # the Gluon tiles replace whole tiles of 64+ rows only: decode tiles and split-K stay in the tile loop
    assert C.wgmma_fp8(cfg, False).num_stages == C.WGMMA_FP8_PRECISE_TILE[3]
    assert C.wgmma_fp8(cfg, True).block_n == C.WGMMA_FP8_FAST_TILE[1]
    assert C.wgmma_fp8(dataclasses.replace(cfg, block_m=16), False) is None
    assert C.wgmma_fp8(dataclasses.replace(cfg, split_k=4), False) is None


def _quantized(m, n, k, row, device="cuda"):
    a32, w32 = torch.randn(m, k, device=device), torch.randn(n, k, device=device)
    sa = (a32.abs().amax(1, keepdim=True) if row else a32.abs().amax()) / 448
    sw = (w32.abs().amax(1, keepdim=True) if row else w32.abs().amax()) / 448
    a, b = (a32 / sa).to(FP8), (w32 / sw).to(FP8).t()
    sb = sw.t() if row else sw
    return a, b, sa.float().contiguous(), sb.float().contiguous()


# M, N, K at every edge of the 128x128x128 and 128x256x128 tiles (1 row; N of 16, 48 and 1040; K of one block,
# odd and even block counts), and more tiles than programs
GPU_SHAPES = [(1, 16, 16), (127, 48, 208), (200, 1040, 384), (1000, 272, 1152), (4096, 4096, 1024)]


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
@pytest.mark.parametrize("fast", [False, True], ids=["precise", "fast"])
def test_fp8_wgmma_matches_float64_like_torch(fast):
    for m, n, k in GPU_SHAPES:
        for call in range(6):  # fresh data and scales, poisoned output, both scalings
            row = call % 2 == 1
            a, b, sa, sb = _quantized(m, n, k, row)
            ref = (a.double() * sa.double()) @ (b.double() * sb.double())
            out = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
            assert fp8.scaled_mm(a, b, sa, sb, out=out, use_fast_accum=fast, kernel="wgmma") is out
            err = ((out.double() - ref).norm() / ref.norm()).item()
            mine = torch._scaled_mm(a, b, sa, sb, out_dtype=BF16, use_fast_accum=fast)
            err_torch = ((mine.double() - ref).norm() / ref.norm()).item()
            assert err < max(1.5 * err_torch, 5e-3), (m, n, k, row, fast, err, err_torch)


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
    for m, n, k in GPU_SHAPES + [(333, 1000, 520)]:
        for tile in ((128, 256, 64, 3, 8), (128, 128, 64, 6, 8), (64, 128, 64, 4, 4)):
            a = torch.randn(m, k, device="cuda", dtype=BF16)
            b = torch.randn(n, k, device="cuda", dtype=BF16).t() if b_t else torch.randn(k, n, device="cuda",
                                                                                          dtype=BF16)
            c = torch.full((m, n), float("nan"), device="cuda", dtype=BF16)
            if not wgmma.supports(a, b, c):
                assert (n * 2) % 16 or (k * 2) % 16  # only rows TMA cannot describe are refused
                continue
            wgmma.run(a, b, c, *tile, programs=torch.cuda.get_device_properties(0).multi_processor_count)
            ref = a.double() @ b.double()
            err = ((c.double() - ref).norm() / ref.norm()).item()
            assert err < 1e-2, (m, n, k, tile, err)


@pytest.mark.skipif(not ON_HOPPER, reason="Gluon's warpgroup MMAs: a Hopper GPU only")
def test_fp8_wgmma_many_calls_in_a_row():
    # 30 calls without a sync in between, each with fresh operands and a poisoned output, checked afterwards
    calls = []
    for i in range(30):
        a, b, sa, sb = _quantized(384, 512, 640, i % 2 == 1)
        out = torch.full((384, 512), float("nan"), device="cuda", dtype=BF16)
        fp8.scaled_mm(a, b, sa, sb, out=out, kernel="wgmma")
        calls.append((a, b, sa, sb, out))
    for a, b, sa, sb, out in calls:
        ref = (a.double() * sa.double()) @ (b.double() * sb.double())
        assert ((out.double() - ref).norm() / ref.norm()).item() < 5e-3
