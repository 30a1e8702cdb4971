"""An expert-parallel MoE block as an nn.Module, with autograd (fused_ops.nn.MoE).

    moe = fused_ops.nn.MoE(ctx, hidden=H, ffn=F, num_experts=E, top_k=k)   # experts sharded over ctx's ranks
    y = moe(x)                                                              # x: (..., H) tokens of this rank

Router: a replicated nn.Linear(H, E, bias=False), softmax in fp32, top-k, weights renormalized over the k picks
(Mixtral's gate). Experts: rank r owns experts r*E_local .. (r+1)*E_local - 1 as w1: E_local x H x F and w2: E_local x
F x H (y_e = act(x w1[e]) w2[e]), the layout of fused_ops.moe_ffn. Forward: assignments sorted by expert, token rows
dispatched to the experts' owners (all_to_all_v), the local experts applied, rows returned (all_to_all_v back),
summed with the router weights. Backward: the dispatch's backward is a return (all_to_all_v with the splits swapped)
and the return's backward a dispatch; torch autograd does the rest (router, experts, weights). Gradients: expert
weights get every rank's tokens' contributions; the replicated router weight gets this rank's tokens' share (sum it
over ranks, as data parallelism does, for the full gradient).

Cost per call: two all_to_all_v calls forward and two backward (iris "pull" by default, or "nccl"), one host
synchronization each way (the received row counts size the expert GEMMs' inputs). Collective: every rank calls it
with the same token count. Without autograd (torch.no_grad(), inference), forward runs fused_ops.moe_ffn instead:
the same math in the catalog's kernels (`inference_variant`, default "fused": no host synchronization), with the
op's capacity rules (default: no row is ever dropped).
"""

import torch
from torch import nn

from iris.all_to_all_v import all_to_all_v

_ACT = {"silu": nn.functional.silu, "relu": torch.relu, "none": lambda v: v}


class _Exchange(torch.autograd.Function):
    """Rows of x (send[d] rows to rank d, in rank order) -> rows received (recv[s] from rank s, in rank order).
    Backward: the same exchange with send and recv swapped. Inputs and outputs are padded to fixed row counts
    (rows_in, rows_out) so the collective's heap workspaces are reused across calls."""

    @staticmethod
    def forward(x, send, recv, rows_in, rows_out, handle, variant):
        return _exchange(x, send, recv, rows_in, rows_out, handle, variant)

    @staticmethod
    def setup_context(c, inputs, output):
        _, c.send, c.recv, c.rows_in, c.rows_out, c.handle, c.variant = inputs

    @staticmethod
    def backward(c, grad):
        return (_exchange(grad.contiguous(), c.recv, c.send, c.rows_out, c.rows_in, c.handle, c.variant),
                None, None, None, None, None, None)


def _exchange(x, send, recv, rows_in, rows_out, handle, variant):
    import iris
    ctx = iris.context(handle)
    padded = x.new_zeros(rows_in, *x.shape[1:])
    padded[:x.shape[0]] = x
    out = x.new_empty(rows_out, *x.shape[1:])
    all_to_all_v(ctx, out, padded, list(send), variant=variant)
    return out[:sum(recv)].clone()


class MoE(nn.Module):
    """Expert-parallel MoE feed-forward block (module docstring). `experts` (optional): (w1, w2) of all E experts,
    E x H x F and E x F x H, to shard from (else initialized here, the same on every rank from `seed`)."""

    def __init__(self, ctx, hidden, ffn, num_experts, top_k, activation="silu", variant="pull", router=None,
                 experts=None, seed=0, dtype=torch.float32, inference_variant="fused", capacity=None):
        super().__init__()
        world, rank = ctx.get_num_ranks(), ctx.get_rank()
        if num_experts % world:
            raise ValueError(f"MoE: num_experts={num_experts} must be divisible by the world size {world} (experts are "
                             f"sharded in blocks of num_experts / world)")
        if not 1 <= top_k <= num_experts:
            raise ValueError(f"MoE: top_k={top_k}: expected 1..num_experts={num_experts}")
        if activation not in _ACT:
            raise ValueError(f"MoE: activation={activation!r}; expected one of {', '.join(_ACT)}")
        if variant not in ("pull", "nccl", "auto"):
            raise ValueError(f"MoE: variant={variant!r}; expected 'pull' (iris) or 'nccl'")
        self.ctx, self.handle = ctx, ctx.handle
        self.hidden, self.ffn, self.num_experts, self.top_k = hidden, ffn, num_experts, top_k
        self.e_local, self.world, self.rank = num_experts // world, world, rank
        self.activation, self.variant = activation, variant
        self.inference_variant, self.capacity = inference_variant, capacity
        dev = ctx.get_device()
        g = torch.Generator().manual_seed(seed)
        if router is None:
            router = torch.randn(num_experts, hidden, generator=g) / hidden ** 0.5
        if experts is None:
            experts = (torch.randn(num_experts, hidden, ffn, generator=g) / hidden ** 0.5,
                       torch.randn(num_experts, ffn, hidden, generator=g) / ffn ** 0.5)
        w1, w2 = experts
        if tuple(w1.shape) != (num_experts, hidden, ffn) or tuple(w2.shape) != (num_experts, ffn, hidden):
            raise ValueError(f"MoE: experts must be E x H x F and E x F x H = ({num_experts}, {hidden}, {ffn}) and "
                             f"({num_experts}, {ffn}, {hidden}); got {tuple(w1.shape)} and {tuple(w2.shape)}")
        mine = slice(rank * self.e_local, (rank + 1) * self.e_local)
        self.router = nn.Parameter(router.detach().to(dev, dtype).clone())
        self.w1 = nn.Parameter(w1.detach()[mine].to(dev, dtype).clone())
        self.w2 = nn.Parameter(w2.detach()[mine].to(dev, dtype).clone())

    def route(self, x):
        """(top-k expert ids, renormalized weights in x's dtype) of the flattened tokens x (T x H)."""
        probs = torch.softmax((x @ self.router.t()).float(), dim=-1)
        top, idx = probs.topk(self.top_k, dim=-1)
        return idx, (top / top.sum(-1, keepdim=True)).to(x.dtype)

    def forward(self, x):
        if x.shape[-1] != self.hidden:
            raise ValueError(f"MoE: input's last dimension is {x.shape[-1]}, expected hidden={self.hidden}")
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.hidden)
        t, k, w, el = x2.shape[0], self.top_k, self.world, self.e_local
        idx, weights = self.route(x2)
        if self.inference_variant is not None and not (torch.is_grad_enabled() and (
                x.requires_grad or any(p.requires_grad for p in self.parameters()))):
            from .moe import moe_ffn
            y = moe_ffn(self.ctx, x2, idx, weights, self.w1, self.w2, variant=self.inference_variant,
                        activation=self.activation, capacity=self.capacity)
            return y.reshape(*lead, self.hidden)
        flat = idx.reshape(-1)
        order = torch.argsort(flat, stable=True)
        per_expert = torch.zeros(self.num_experts, dtype=torch.int64, device=x.device).scatter_add_(
            0, flat, torch.ones_like(flat))
        table = torch.empty(w * el, dtype=torch.int64, device=x.device)  # [source][local expert] counts
        all_to_all_v(self.ctx, table.view(-1, 1), per_expert.view(-1, 1), [el] * w, variant=self.variant)
        counts = table.view(w, el)
        send = per_expert.view(w, el).sum(1).tolist()  # host sync: the expert GEMMs' row counts
        cnt = counts.tolist()
        recv = [sum(row) for row in cnt]
        rows_in, rows_out = t * k, w * t * k
        got = _Exchange.apply(x2[order // k], send, recv, rows_in, rows_out, self.handle, self.variant)
        # received: by source rank, then by expert; run each local expert on its rows
        expert_of = torch.arange(el, device=x.device).repeat(w).repeat_interleave(counts.reshape(-1))
        by_expert = torch.argsort(expert_of, stable=True)
        xs = got[by_expert]
        outs, start = [], 0
        for e in range(el):
            n = sum(cnt[s][e] for s in range(w))
            outs.append(_ACT[self.activation](xs[start:start + n] @ self.w1[e]) @ self.w2[e])
            start += n
        ys = torch.cat(outs) if outs else xs
        out = torch.empty_like(ys).index_copy(0, by_expert, ys) if ys.shape[0] else ys
        back = _Exchange.apply(out, recv, send, rows_out, rows_in, self.handle, self.variant)
        ret = torch.empty_like(back).index_copy(0, order, back)
        y = (ret.view(t, k, self.hidden) * weights[:, :, None]).sum(1)
        return y.reshape(*lead, self.hidden)
