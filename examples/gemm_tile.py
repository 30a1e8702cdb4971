"""The local tile loop that examples 07-10 share: one BM x BN tile of A @ B, computed the same way in all four
GEMM + All-Scatter patterns, so that each example shows only how its communication differs."""

import iris  # noqa: F401  (before any kernel is defined: on the CPU backend it turns the interpreter on)
import triton
import triton.language as tl


@triton.jit
def matmul_tile(A, B, pid_m, pid_n, M, NL, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """One BM x BN tile of A (M x K) @ B (K x NL), row-major, accumulated in fp32."""
    rm, rn = pid_m * BM + tl.arange(0, BM), pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(A + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(B + rk[:, None] * NL + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < NL), other=0.0)
        acc += tl.dot(a, b)
    return acc
