"""Inputs and float64 references for every op, deterministic per seed so that every rank can rebuild every rank's
inputs (the reference needs all of them) without communicating. Used by the tests, the GPU validation and the sweep.

Shapes are global: M x N x K is the whole problem; each rank holds its slice as the op's layout says."""

import math

import torch


def _randn(shape, gen, device):
    return torch.randn(*shape, generator=gen, dtype=torch.float32, device=device).double()


def local_shapes(op, m, n, k, world):
    """(a_shape, b_shape, c_shape) of one rank."""
    if op == "gemm_all_scatter":
        return (m, k), (k, n // world), (m, n)
    if op == "gemm_all_reduce":
        return (m, k // world), (k // world, n), (m, n)
    if op == "all_gather_gemm":
        return (m // world, k), (k, n // world), (m, n // world)
    if op == "gemm_reduce_scatter":
        return (m, k // world), (k // world, n), (m // world, n)
    raise KeyError(f"no reference layout for op {op!r}")


def check_divisible(op, m, n, k, world):
    splits = {"gemm_all_scatter": [("N", n)], "gemm_all_reduce": [("K", k)], "all_gather_gemm": [("M", m), ("N", n)],
              "gemm_reduce_scatter": [("M", m), ("K", k)]}[op]
    for name, size in splits:
        if size % world:
            raise ValueError(f"{op}: {name}={size} must be divisible by the world size {world}")


def make_inputs(op, seed, world, rank, m, n, k, dtype, device, reference=True):
    """This rank's (a, b) in `dtype` on `device`, and the float64 reference C (or None)."""
    check_divisible(op, m, n, k, world)
    gen = torch.Generator(device=device).manual_seed(seed)
    a = (_randn((m, k), gen, device) / math.sqrt(k)).to(dtype)
    b = _randn((k, n), gen, device).to(dtype)
    ref = a.double() @ b.double() if reference else None
    ml, nl, kl = m // world, n // world, k // world
    rows, cols, ks = (slice(r * rank, r * (rank + 1)) for r in (ml, nl, kl))
    if op == "gemm_all_scatter":
        return a, b[:, cols].contiguous(), ref
    if op == "all_gather_gemm":
        return a[rows].contiguous(), b[:, cols].contiguous(), None if ref is None else ref[:, cols]
    if op == "gemm_reduce_scatter":
        return a[:, ks].contiguous(), b[ks].contiguous(), None if ref is None else ref[rows]
    return a[:, ks].contiguous(), b[ks].contiguous(), ref  # gemm_all_reduce


def rel_error(out, ref):
    """||out - ref|| / ||ref|| in float64; NaN (an unwritten output) compares as failure."""
    return ((out.double() - ref).norm() / ref.norm()).item()


# float8_e4m3fn: FP8 operands with a bfloat16 (float16 on the CPU) result, against the float64 product of the
# dequantized operands, so only the result's rounding and the FP8 accumulation count (tests/test_fp8_catalog.py TOL)
TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-3, torch.float8_e4m3fn: 1e-2}
