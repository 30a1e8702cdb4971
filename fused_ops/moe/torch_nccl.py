"""Baseline: sort assignments by expert, all_to_all_single dispatch (split sizes read on the host, as NCCL needs),
one GEMM per local expert in PyTorch (torch._grouped_mm on CUDA bf16 where it exists, else a loop), all_to_all_single
back, weighted sum. Host synchronizations: two (the split sizes)."""

import torch
import torch.distributed as dist

from iris import settings

from ..registry import register

GROUPED_MM = settings.value("FUSED_OPS_MOE_GROUPED_MM")
_ACT = {"silu": torch.nn.functional.silu, "relu": torch.relu, "none": lambda v: v}


def experts(xs, counts, w1, w2, act):
    """Rows xs grouped by local expert (counts[e] rows each, host ints) through act(x @ w1[e]) @ w2[e]."""
    if (GROUPED_MM and xs.is_cuda and xs.dtype == torch.bfloat16 and hasattr(torch, "_grouped_mm") and xs.shape[0] and
            w1.shape[2] % 8 == 0 and w1.shape[1] % 8 == 0):
        offs = torch.tensor(counts, device=xs.device).cumsum(0).to(torch.int32)
        h = _ACT[act](torch._grouped_mm(xs, w1, offs=offs))
        return torch._grouped_mm(h, w2, offs=offs)
    out = torch.empty_like(xs)
    start = 0
    for e, n in enumerate(counts):
        if n:
            out[start:start + n] = _ACT[act](xs[start:start + n] @ w1[e]) @ w2[e]
        start += n
    return out


@register("moe_ffn", "torch_nccl", "baseline", "argsort, all_to_all_single, per-expert GEMMs (torch._grouped_mm), "
                                               "all_to_all_single back, weighted sum")
def run(p):
    group = getattr(p.ctx, "group", None)
    flat = p.idx.reshape(-1).long()
    order = torch.argsort(flat, stable=True)
    per_expert = torch.zeros(p.e, dtype=torch.int64, device=flat.device).scatter_add_(0, flat, torch.ones_like(flat))
    recv_per_expert = torch.empty_like(per_expert)  # [source][local expert]
    dist.all_to_all_single(recv_per_expert, per_expert, group=group)
    send = per_expert.view(p.world, p.e_local).sum(1).tolist()
    recv_table = recv_per_expert.view(p.world, p.e_local)
    recv = recv_table.sum(1).tolist()
    rows = p.x[order // p.k]
    got = p.x.new_empty(sum(recv), p.h)
    dist.all_to_all_single(got, rows, output_split_sizes=recv, input_split_sizes=send, group=group)
    # received: by source, then by expert within each source; regroup by expert for the GEMMs
    src_expert = torch.arange(p.e_local, device=flat.device).repeat(p.world).repeat_interleave(recv_table.reshape(-1))
    by_expert = torch.argsort(src_expert, stable=True)
    out = torch.empty_like(got)
    out[by_expert] = experts(got[by_expert], recv_table.sum(0).tolist(), p.w1, p.w2, p.act)
    back = p.x.new_empty(p.n_assign, p.h)
    dist.all_to_all_single(back, out, output_split_sizes=send, input_split_sizes=recv, group=group)
    ret = torch.empty_like(back)
    ret[order] = back
    y = (ret.view(p.t, p.k, p.h).float() * p.weights.float()[:, :, None]).sum(1)
    p.y.copy_(y)
