"""Expert parallelism as a catalog op: moe_ffn (dispatch, grouped expert GEMMs, combine).

    y = fused_ops.moe_ffn(ctx, x, topk_idx, topk_weights, w1, w2, variant="fused")   # or "bulk_sync", "torch_nccl"

Layout (per rank): x T x H tokens; topk_idx T x k expert ids in [0, E) (int32/int64), topk_weights T x k (x's dtype or
float32); experts sharded by blocks: rank r owns experts r*E_local .. (r+1)*E_local - 1 (E = E_local * world), with
w1: E_local x H x F and w2: E_local x F x H (an nn.Linear weight's .t() per expert). Output y (T x H, anywhere on the
device): y[t] = sum_j topk_weights[t, j] * act(x[t] @ w1[e]) @ w2[e], e = topk_idx[t, j], act = SiLU (or "relu",
"none"). Every rank calls with the same T, H, F, E_local, k and dtype (workspaces are collective, made per shape).

Variants (fused_ops.list_variants("moe_ffn")):
- torch_nccl (baseline): argsort by expert, all_to_all_single dispatch (split sizes read on the host), one GEMM per
  expert in PyTorch (torch._grouped_mm on CUDA bf16 where it exists), all_to_all_single back, weighted sum.
- bulk_sync: iris dispatch kernel (rows pushed into the owners' per-expert buffers), a device barrier (inside the
  GEMM kernel), the catalog's grouped GEMM twice (ragged M per expert, tile schedule computed on the device), an iris
  kernel returning the rows to their sources, a barrier, the weighted sum.
- fused: the same dispatch with per-row-block arrival counts; a persistent kernel takes each expert's row blocks as
  their rows land, computes both GEMMs and stores the results straight into the sources' buffers, raising a flag per
  row; the sources sum each token as its k rows arrive. No barrier, no host synchronization.

Capacity: each local expert has `capacity` rows per call (default world * T: every token of every rank, the most an
expert can receive when a token's k experts are distinct). Rows past it are dropped, never silently: the token's output
row is NaN and the rank's status records the capacity needed (CPU backend: raises MoEError after the call; GPUs:
fused_ops.moe.check_errors(ctx) raises, a host synchronization). Out-of-range expert ids are treated the same way
(NaN row, recorded). Heap: E_local * capacity * H + T * k * H elements of x's dtype plus small counters.
"""

from .. import registry

registry.define_op("moe_ffn", "tokens T x H and top-k routing on every rank, experts sharded by blocks of E/world; "
                              "every rank ends with its tokens' weighted expert outputs (T x H)", kind="moe")

from .op import MoEError, check_errors, moe_ffn, reference  # noqa: E402,F401
from . import bulk_sync, fused, torch_nccl  # noqa: E402,F401  (register the variants)
