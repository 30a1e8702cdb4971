"""fused_ops.matmul, the GEMM alone on one GPU (fused_ops/local_gemm.py): the tile loop under the interpreter against
float64 at every edge (M/N/K of 1, primes, split-K, both layouts of B), poisoned outputs and repeated calls; host
refusals; on a Hopper GPU, the kernel the defaults pick per shape and its results."""

import pytest
import torch
import triton
import triton.language as tl

import fused_ops
from fused_ops import Config
from fused_ops import local_gemm as L

ON_GPU = torch.cuda.is_available() and __import__("iris").BACKEND == "cuda"
DEV = "cuda" if ON_GPU else "cpu"


def _b(k, n, col_major, dtype, device=DEV):
    return torch.randn(n, k, dtype=dtype, device=device).t() if col_major else torch.randn(k, n, dtype=dtype,
                                                                                           device=device)


CASES = [(1, 1, 1, None), (17, 31, 29, Config(block_m=16, block_n=16, block_k=16)),
         (37, 24, 70, Config(block_m=16, block_n=16, block_k=16, split_k=3)), (40, 33, 48, None),
         # a decode row with more programs than slices of its tiles (config.decode_alone's shape of launch)
         (1, 40, 70, Config(block_m=16, block_n=16, block_k=16, split_k=3, gemm_sms=12)),
         # edge tiles of one row and one column past a whole one (the row box moved inside by 15 of its 16; the
         # column box stays, 16 columns being the most it may move by: gemm.COL_ALIGN)
         (33, 49, 20, Config(block_m=16, block_n=16, block_k=16)),
         # a column box moved inside by 16 of its 32, still 10 columns past the edge (COL_ALIGN's rounding)
         (20, 70, 20, Config(block_m=16, block_n=32, block_k=16))]


@pytest.mark.skipif(ON_GPU, reason="the interpreter's path (CPU tensors); test_gpu_defaults_match_float64 covers GPUs")
@pytest.mark.parametrize("m, n, k, cfg", CASES)
@pytest.mark.parametrize("col_major", [False, True], ids=["b-row-major", "b-col-major"])
@pytest.mark.parametrize("inside", [False, True], ids=["edges-past", "edges-inside"])
def test_matmul_matches_float64_at_the_edges(m, n, k, cfg, col_major, inside, monkeypatch):
    # inside: FUSED_OPS_EDGE_INSIDE, the last row and column of tiles loaded from boxes that end at the edge; each tile
    # stores only its own rows, so the poisoned output shows a row it missed and float64 one stored from wrong origins
    monkeypatch.setattr(fused_ops.gemm, "EDGE_INSIDE", inside)
    for call in range(2):  # fresh inputs, poisoned output, repeated calls (fp16: the interpreter has no bf16 dots)
        dtype = torch.float16
        torch.manual_seed(m * 100 + n + call)
        a, b = torch.randn(m, k, dtype=dtype), _b(k, n, col_major, dtype)
        out = torch.full((m, n), float("nan"), dtype=dtype)
        assert fused_ops.matmul(a, b, out=out, config=cfg) is out
        ref = a.double() @ b.double()
        err = ((out.double() - ref).norm() / ref.norm()).item()
        assert err < 1e-2, (m, n, k, dtype, err)


@triton.jit
def _origins(OUT, size, BLOCK: tl.constexpr, ALIGN: tl.constexpr):
    tl.store(OUT + tl.program_id(0), fused_ops.gemm.tile_origin(tl.program_id(0), size, BLOCK, True, ALIGN))


@pytest.mark.skipif(ON_GPU, reason="the interpreter runs the device function alone (CPU tensors)")
def test_edge_boxes_moved_inside_cover_their_tile_and_keep_columns_16_byte_aligned():
    # TMA faults (illegal instruction) on an innermost coordinate that is not 16 bytes into the row: an H100 did at
    # 333x777, B's column origin 713. Column origins are multiples of COL_ALIGN (16 elements, 16 bytes of FP8) and may
    # leave their box up to 15 columns past the edge; rows move exactly inside. Every box covers its own tile's part.
    for block in (16, 32, 64, 128):
        for size in (1, 15, 16, 17, 33, 49, 70, 80, 129, 200, 333, 777, 1000):
            tiles = triton.cdiv(size, block)
            for align in (1, fused_ops.gemm.COL_ALIGN.value):
                out = torch.full((tiles,), -1, dtype=torch.int32)
                _origins[(tiles,)](out, size, block, align)
                for pid, o in enumerate(out.tolist()):
                    own = (pid * block, min(size, (pid + 1) * block))
                    assert 0 <= o <= own[0] and o + block >= own[1], (block, size, align, pid, o)
                    assert o % align == 0, (block, size, align, pid, o)
                    if size >= block:  # past the edge by less than the rounding
                        assert o + block - size < align, (block, size, align, pid, o)


@pytest.mark.parametrize("case, error, words", [
    ("fp32", TypeError, "expected bfloat16 or float16"), ("mixed", TypeError, "expected one dtype"),
    ("inner", ValueError, "inner dimensions differ"), ("strides", ValueError, "a must be row-major"),
    ("out", ValueError, "out must be a row-major 4 x 6"), ("kernel", ValueError, "'wgmma' or 'tile_loop'"),
    ("wgmma_cpu", ValueError, "kernel='wgmma' needs a Hopper GPU"),
    ("swap_cpu", ValueError, "kernel='wgmma' needs a Hopper GPU"),
    ("swap_tile_loop", ValueError, "config.swap_ab=True runs the Gluon kernel; kernel='tile_loop' has no such"),
    ("rem_unswapped", ValueError, "config.rem_rows=16 widens the Gluon kernel's swapped tiles: pass swap_ab=True"),
    ("rem_cols_swapped", ValueError, "config.rem_cols=32 widens the Gluon kernel's tiles that are not swapped"),
    ("rem_cols_tile_loop", ValueError, "config.rem_cols=32 runs the Gluon kernel; kernel='tile_loop' has no such"),
    ("turns_tile_loop", ValueError, "config.turns=True runs the Gluon kernel; kernel='tile_loop' has no such")])
def test_matmul_refusals_say_what_was_expected(case, error, words):
    a, b, kw = torch.randn(4, 8, dtype=torch.bfloat16), torch.randn(8, 6, dtype=torch.bfloat16), {}
    # (CPU tensors: every refusal comes before anything would run; on a GPU machine CPU tensors need the interpreter)
    if case == "fp32":
        a, b = a.float(), b.float()
    elif case == "mixed":
        b = b.half()
    elif case == "inner":
        b = torch.randn(9, 6, dtype=torch.bfloat16)
    elif case == "strides":
        a = torch.randn(8, 4, dtype=torch.bfloat16).t()
    elif case == "out":
        kw["out"] = torch.empty(6, 4, dtype=torch.bfloat16)
    elif case == "kernel":
        kw["kernel"] = "cublas"
    elif case == "wgmma_cpu":
        if ON_GPU:
            pytest.skip("CPU tensors: the Gluon kernel is refused there")
        kw["kernel"] = "wgmma"
    elif case.startswith("swap"):  # swapped tiles are the Gluon kernel's alone
        if ON_GPU and case == "swap_cpu":
            pytest.skip("CPU tensors: the Gluon kernel is refused there")
        kw["config"] = fused_ops.Config(swap_ab=True)
        kw["kernel"] = "tile_loop" if case == "swap_tile_loop" else None
    elif case == "rem_unswapped":
        kw["config"] = fused_ops.Config(rem_rows=16)
    elif case.startswith("rem_cols"):
        kw["config"] = fused_ops.Config(rem_cols=32, swap_ab=case == "rem_cols_swapped")
        kw["kernel"] = "tile_loop" if case == "rem_cols_tile_loop" else None
    elif case == "turns_tile_loop":
        kw["config"], kw["kernel"] = fused_ops.Config(block_m=64, turns=True), "tile_loop"
    with pytest.raises(error, match=words):
        fused_ops.matmul(a, b, **kw)


@pytest.mark.skipif(not (ON_GPU and torch.cuda.get_device_capability()[0] == 9), reason="Hopper picks (Gluon)")
@pytest.mark.parametrize("inside", [False, True], ids=["edges-past", "edges-inside"])
def test_gpu_defaults_pick_per_shape_and_match_float64(inside, monkeypatch):
    monkeypatch.setattr(fused_ops.gemm, "EDGE_INSIDE", inside)  # the tile loop's (the Gluon kernel's are inside)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for m, n, k, want in ((4096, 4096, 1024, "wgmma"), (16384, 1152, 512, "wgmma"), (16, 4096, 1024, "wgmma"),
                          (256, 1024, 1024, "tile_loop"), (4096, 1000, 520, "wgmma"), (333, 777, 2048, "tile_loop"),
                          (1024, 2112, 1024, "wgmma"), (2048, 5000, 256, "wgmma"),  # (swapped tiles)
                          # decode rows beyond one wave of swapped 16x64 tiles: several tile-loop programs per SM
                          (1, 9216, 4096, "tile_loop"), (16, 26624, 1024, "tile_loop"),
                          # ... within it, the swapped tiles whole or in slices of K
                          (1, 2560, 8192, "wgmma"), (16, 5120, 3456, "wgmma"), (1, 3072, 4096, "wgmma"),
                          # 64-row tiles in slices, and the Gluon kernel's where they fill most of a wave; Gluon
                          # tiles 192, 96 and 144 (256 rows) wide
                          (128, 4096, 3584, "tile_loop"), (128, 4096, 7168, "wgmma"), (1024, 2880, 1024, "wgmma"),
                          (1024, 1280, 2880, "wgmma"),
                          (4096, 1152, 3584, "wgmma"), (128, 38016, 1024, "wgmma"),  # 288 wide
                          (1024, 1440, 1024, "wgmma")):  # 96 wide, B's rows not 128-byte aligned
        for col_major in (False, True):
            a, b = torch.randn(m, k, device="cuda", dtype=torch.bfloat16), _b(k, n, col_major, torch.bfloat16)
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
            cfg, _ = L.tile_loop_plan(a, b, None, lambda dev, m, n, k: L.defaults(
                dev, m, n, k, torch.bfloat16), "test")
            kernel, _ = L.pick_kernel(a, b, c, cfg, None, False, None, "test")
            if kernel != want and not (want == "wgmma" and n * 2 % 16):  # rows TMA cannot describe
                assert kernel == want, (m, n, k, kernel, sms)
            for _ in range(3):
                a.normal_()
                c.fill_(float("nan"))
                fused_ops.matmul(a, b, out=c)
                ref = a.double() @ b.double()
                assert ((c.double() - ref).norm() / ref.norm()).item() < 1e-2, (m, n, k, kernel)


@pytest.mark.skipif(not (ON_GPU and torch.cuda.get_device_capability()[0] == 9), reason="TMA faults on GPUs only")
@pytest.mark.parametrize("inside", [False, True], ids=["edges-past", "edges-inside"])
def test_gpu_padded_views_of_unaligned_width_match_float64(inside, monkeypatch):
    # B and C as views of padded rows (16-byte aligned: TMA describes them) N wide, N no multiple of 8: an edge box
    # moved to N - BLOCK_N would start off a 16-byte boundary, which TMA faults on (illegal instruction); both
    # kernels, the Gluon one swapped at 16 rows; fresh values and a poisoned output every call
    monkeypatch.setattr(fused_ops.gemm, "EDGE_INSIDE", inside)
    for m, n, k in ((333, 777, 2048), (16, 777, 1024), (129, 1001, 512)):
        for kernel in ("tile_loop", "wgmma"):
            padded = n + 8 + -n % 8
            a = torch.empty(m, k, device="cuda", dtype=torch.bfloat16)
            b = torch.empty(k, padded, device="cuda", dtype=torch.bfloat16)[:, :n]
            c = torch.empty(m, padded, device="cuda", dtype=torch.bfloat16)[:, :n]
            for _ in range(3):
                a.normal_()
                b.normal_()
                c.fill_(float("nan"))
                fused_ops.matmul(a, b, out=c, kernel=kernel)
                ref = a.double() @ b.double()
                assert ((c.double() - ref).norm() / ref.norm()).item() < 1e-2, (m, n, k, kernel)


def test_copies_into_aligned_rows_only_where_they_pay():
    assert L.copies_pay(4099, 4097, 4093, 2, False, False)  # ~137 GFLOP on the pointer path
    assert L.copies_pay(8192, 4097, 4096, 2, True, False)  # B only
    assert not L.copies_pay(4099, 4097, 4093, 2, True, True)  # nothing to copy
    assert L.copies_pay(129, 515, 1001, 2, False, False)  # the pointer path ran 0.17x torch.matmul there
    assert not L.copies_pay(1, 4097, 4097, 2, True, False)  # GEMV: copying B costs what the GEMM does
    assert not L.copies_pay(16, 4097, 4096, 2, True, False)  # decode rows stream B as given about as fast
    assert L.copies_pay(16, 4096, 4097, 2, False, True)  # ... but A's rows are cheap to copy, and TMA then runs
    assert L.copies_pay(32, 999, 1000, 2, True, False)  # the pointer path ran 0.16x torch.matmul there
    assert not L.copies_pay(8, 9, 7, 2, False, False)  # the copies' launches cost more than the GEMM
    a, b = torch.randn(33, 17), torch.randn(17, 9)
    assert all(x is y for x, y in zip(L.aligned_operands(a, b), (a, b)))  # CPU: the interpreter reads any stride


@pytest.mark.skipif(not ON_GPU, reason="the copies are made for TMA (CUDA)")
def test_gpu_unaligned_operands_copied_match_float64():
    # rows TMA cannot describe (odd K and N): copied into aligned rows where the GEMM pays for it, pointer path
    # where it does not; fresh values and a poisoned output every call, B in both layouts, out given or not
    for m, n, k in ((2051, 2053, 2047), (129, 515, 1001), (1000, 999, 1000)):
        for col_major in (False, True):
            b = _b(k, n, col_major, torch.bfloat16)
            a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            a2, b2 = L.aligned_operands(a, b)
            copied = a2 is not a or b2 is not b
            assert copied == L.copies_pay(m, n, k, 2, k % 8 == 0, (n if not col_major else k) % 8 == 0)
            if copied:
                assert torch.equal(a2, a) and torch.equal(b2, b)
            for call in range(3):
                a.normal_()
                b.normal_()
                c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16) if call else None
                got = fused_ops.matmul(a, b, out=c)
                ref = a.double() @ b.double()
                assert ((got.double() - ref).norm() / ref.norm()).item() < 1e-2, (m, n, k, col_major, copied, call)
