"""The fused ops as PyTorch operators and tensor-parallel layers, on 2 ranks: registration (schema, fake tensors,
autograd: torch.library.opcheck), a tensor-parallel MLP against the single-device model (outputs and every
gradient, repeated steps, both layer pairs, fused and NCCL variants), and torch.compile(fullgraph=True)."""

import pytest
import torch
from torch import nn

import fused_ops
import fused_ops.library as fl
from conftest import ON_GPU, gpu_per_rank
from fused_ops.nn import ColumnParallelLinear, RowParallelLinear

DTYPE = "bfloat16" if ON_GPU else "float32"


def _operands(ctx, op, seed):
    """Small operands in the op's layout (global 64 x 48 x 32), differing by rank (except gemm_all_scatter's A, which
    is the same everywhere by definition), needing gradients."""
    w, r, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    shapes = {"gemm_all_scatter": ((64, 32), (32, 48 // w)), "gemm_all_reduce": ((64, 32 // w), (32 // w, 48)),
              "all_gather_gemm": ((64 // w, 32), (32, 48 // w)), "gemm_reduce_scatter": ((64, 32 // w), (32 // w, 48))}
    out = []
    for i, s in enumerate(shapes[op]):
        shared = op == "gemm_all_scatter" and i == 0  # the same on every rank
        g = torch.Generator(device=dev).manual_seed(seed + 10 * i + (0 if shared else 101 * r))
        out.append(torch.randn(*s, generator=g, device=dev).to(getattr(torch, DTYPE)).requires_grad_())
    return out


def r_opcheck(ctx, op):
    a, b = _operands(ctx, op, 1)
    extra = (True,) if op == "all_gather_gemm" else ()
    tests = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
    res = torch.library.opcheck(getattr(torch.ops.fused_ops, op).default, (a, b, "auto", ctx.handle, *extra),
                                test_utils=tests)
    return {k: v for k, v in res.items() if v != "SUCCESS"}


@pytest.mark.parametrize("op", fused_ops.list_ops())
def test_opcheck(ranks2, op):
    assert ranks2.run(r_opcheck, op) == [{}, {}]


def _reference_loss(op, A, B, grads, r):
    """This rank's expected output and the loss whose gradients the op's backward must produce: replicated outputs
    carry one gradient (the same on every rank), per-rank outputs each their own."""
    if op == "gemm_all_scatter":
        out = torch.cat([A[r] @ b for b in B], 1)
        return out, (out * grads[r]).sum()
    if op == "gemm_all_reduce":
        out = sum(a @ b for a, b in zip(A, B))
        return out, (out * grads[r]).sum()
    if op == "all_gather_gemm":
        outs = [torch.cat(A) @ b for b in B]
        return outs[r], sum((o * g).sum() for o, g in zip(outs, grads))
    full = sum(a @ b for a, b in zip(A, B))
    return full.chunk(len(A))[r], (full * torch.cat(grads)).sum()


def r_op_grads(ctx, op, variant):
    """Each op and its autograd (the dual fused op) against float64 torch on all ranks' operands, 3 calls in a row."""
    import torch.distributed as dist

    w, r = ctx.get_num_ranks(), ctx.get_rank()
    worst = 0.0
    for call in range(3):
        a, b = _operands(ctx, op, 1000 * call)
        parts = [[torch.empty_like(t) for _ in range(w)] for t in (a, b)]
        for out, t in zip(parts, (a, b)):
            dist.all_gather(out, t.detach().contiguous())
        A, B = [[p.double().requires_grad_() for p in ps] for ps in parts]
        out = getattr(fl, op)(ctx, a, b, variant=variant)
        replicated = op in ("gemm_all_scatter", "gemm_all_reduce")
        g = torch.Generator(device=a.device).manual_seed(77 + call + (0 if replicated else r))
        grad = torch.randn(out.shape, generator=g, device=a.device, dtype=torch.float64)
        grads = [torch.empty_like(grad) for _ in range(w)]
        dist.all_gather(grads, grad)
        want, loss = _reference_loss(op, A, B, grads, r)
        loss.backward()
        out.backward(grad.to(out.dtype))
        for got, ref in ((out, want), (a.grad, A[r].grad), (b.grad, B[r].grad)):
            err = ((got.double() - ref).norm() / ref.norm()).item()
            if not err < (2e-2 if ON_GPU else 1e-4):
                return f"call {call}: relative error {err} for shape {tuple(got.shape)}"
            worst = max(worst, err)
    return worst


@gpu_per_rank(2)
@pytest.mark.parametrize("variant", ["auto", "torch_nccl"])
@pytest.mark.parametrize("op", fused_ops.list_ops())
def test_op_forward_and_backward(ranks2, op, variant):
    errs = ranks2.run(r_op_grads, op, variant)
    assert all(isinstance(e, float) for e in errs), errs


def _mlp(seed, hidden, dev):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden)).to(dev)


def r_tp_mlp(ctx, sequence_parallel, variant, compiled):
    """Tensor-parallel MLP built from a single-device one: outputs, input and parameter gradients match, 3 steps."""
    import torch.distributed as dist

    w, r, dev, hidden, tokens = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device(), 16, 24
    dtype = getattr(torch, DTYPE)
    ref = _mlp(0, hidden, dev).double()
    fc1, fc2 = _mlp(0, hidden, dev).to(dtype)[::2]
    tp = nn.Sequential(ColumnParallelLinear(ctx, fc1, gather_input=sequence_parallel, variant=variant), nn.GELU(),
                       RowParallelLinear(ctx, fc2, reduce="scatter" if sequence_parallel else "all", variant=variant))
    run = torch.compile(tp, fullgraph=True, backend="aot_eager") if compiled else tp
    rows = slice(r * tokens // w, (r + 1) * tokens // w) if sequence_parallel else slice(None)
    tol = 3e-2 if ON_GPU else 1e-4
    for step in range(3):
        x = torch.randn(tokens, hidden, generator=torch.Generator(device=dev).manual_seed(step), device=dev)
        xr = x.double().requires_grad_()
        want = ref(xr)
        xt = x[rows].to(dtype).requires_grad_()
        got = run(xt)
        gy = torch.randn(want.shape, generator=torch.Generator(device=dev).manual_seed(100 + step), device=dev)
        want.backward(gy.double())
        got.backward(gy[rows].to(dtype))
        checks = [("y", got, want[rows]), ("x.grad", xt.grad, xr.grad[rows])]
        fc1_rows = slice(r * 4 * hidden // w, (r + 1) * 4 * hidden // w)
        checks += [("fc1.weight.grad", tp[0].weight.grad, ref[0].weight.grad[fc1_rows]),
                   ("fc1.bias.grad", tp[0].bias.grad, ref[0].bias.grad[fc1_rows]),
                   ("fc2.weight.grad", tp[2].weight.grad, ref[2].weight.grad[:, fc1_rows]),
                   ("fc2.bias.grad", tp[2].bias.grad, ref[2].bias.grad)]
        for name, a, b in checks:
            err = ((a.double() - b).norm() / b.norm()).item()
            if not err < tol:
                return f"step {step}: {name} relative error {err}"
        for m in (ref, tp):
            m.zero_grad()
        dist.barrier()
    return "ok"


@gpu_per_rank(2)
@pytest.mark.parametrize("sequence_parallel", [True, False], ids=["sequence_parallel", "replicated"])
@pytest.mark.parametrize("variant", ["auto", "torch_nccl"])
def test_tensor_parallel_mlp_matches_single_device(ranks2, sequence_parallel, variant):
    assert ranks2.run(r_tp_mlp, sequence_parallel, variant, False) == ["ok", "ok"]


@gpu_per_rank(2)
@pytest.mark.parametrize("sequence_parallel", [True, False], ids=["sequence_parallel", "replicated"])
def test_tensor_parallel_mlp_compiles_fullgraph(ranks2, sequence_parallel):
    assert ranks2.run(r_tp_mlp, sequence_parallel, "auto", True) == ["ok", "ok"]


def r_captured_forward(ctx, col, row):
    """The sequence-parallel block's forward (AllGather+GEMM, GEMM+ReduceScatter) captured into one CUDA graph with
    other work around it, replayed on fresh inputs: each replay matches the eager forward. Then a layer on a variant
    that a graph may not hold (registry: Variant.capture) is refused on the host under capture."""
    w, r, dev, hidden, tokens = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device(), 64, 512
    fc1, fc2 = _mlp(0, hidden, dev).to(torch.bfloat16)[::2]
    tp = nn.Sequential(ColumnParallelLinear(ctx, fc1, gather_input=True, variant=col), nn.GELU(),
                       RowParallelLinear(ctx, fc2, reduce="scatter", variant=row))
    x = torch.empty(tokens // w, hidden, device=dev, dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):  # warm-up: workspaces exist before capture (which forbids them)
        for _ in range(2):
            x.normal_()
            tp(x)
    torch.cuda.current_stream().wait_stream(side)
    ctx.barrier()
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        y = tp(x * 1.0) * 1.0
    for step in range(3):
        x.copy_(torch.randn(x.shape, generator=torch.Generator(device=dev).manual_seed(10 * step + r), device=dev))
        y.fill_(float("nan"))
        graph.replay()
        with torch.no_grad():
            want = tp(x)
        err = ((y.double() - want.double()).norm() / want.double().norm()).item()
        if not err < 1e-2:
            return f"replay {step}: relative error {err} against the eager forward"
        ctx.barrier()
    layer = ColumnParallelLinear(ctx, fc1, gather_input=True, variant="copy_engine")
    with torch.no_grad():
        layer(x)  # eagerly it runs
        try:
            with torch.cuda.graph(torch.cuda.CUDAGraph()):
                layer(x)
        except Exception as err:  # noqa: BLE001 - the message is what is checked
            return "ok" if "cannot be captured into a CUDA graph" in str(err) else f"refused unclearly: {err}"
    return "copy_engine was captured"


@gpu_per_rank(2)
@pytest.mark.skipif(not ON_GPU, reason="CUDA graphs: GPU only (the CPU backend has no capture)")
@pytest.mark.parametrize("col,row", [("auto", "auto"), ("push", "fused"), ("copy_engine_phased", "copy_engine_phased")])
def test_captured_forward_replays_fresh_and_refuses_what_a_graph_may_not_hold(ranks2, col, row):
    assert ranks2.run(r_captured_forward, col, row) == ["ok", "ok"]


def r_bad_layer(ctx):
    msgs = []
    for make in (lambda: RowParallelLinear(ctx, nn.Linear(8, 8), reduce="sideways"),
                 lambda: ColumnParallelLinear(ctx, nn.Linear(8, 7)),
                 lambda: ColumnParallelLinear(ctx, nn.Linear(8, 8))(torch.randn(4, 6))):
        try:
            make()
            msgs.append("no error")
        except ValueError as err:
            msgs.append(str(err))
    return msgs


def test_layers_reject_bad_shapes(ranks2):
    for msgs in ranks2.run(r_bad_layer):
        assert "expected 'scatter'" in msgs[0] and "cannot split dimension 0 of size 7" in msgs[1]
        assert "last dimension is 6, expected 8" in msgs[2], msgs


def r_all_reduce_rmsnorm_op(ctx, compiled):
    """torch.ops.fused_ops.all_reduce_rmsnorm eagerly and under torch.compile(fullgraph=True): fresh outputs equal to
    float64 of the definition, inputs untouched, 3 calls with fresh inputs."""
    w, r, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    dtype = getattr(torch, DTYPE)

    def layer_exit(x, residual, weight):
        out, res = fl.all_reduce_rmsnorm(ctx, x * 1.0, residual, weight)  # the op inside other torch ops
        return out + 0.0, res

    run = torch.compile(layer_exit, fullgraph=True, backend="aot_eager") if compiled else layer_exit
    for call in range(3):
        g = torch.Generator().manual_seed(30 + call)
        xs = [torch.randn(6, 48, generator=g) for _ in range(w)]
        residual, weight = torch.randn(6, 48, generator=g), torch.rand(48, generator=g) + 0.5
        args = [t.to(dtype).to(dev) for t in (xs[r], residual, weight)]
        before = [a.clone() for a in args]
        out, res = run(*args)
        h = torch.stack([t.to(dtype).double() for t in xs]).sum(0).to(dtype).double() + residual.to(dtype).double()
        want = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * weight.to(dtype).double()
        tol = 3e-2 if ON_GPU else 1e-4
        for name, got, ref in (("out", out, want), ("residual", res, h)):
            err = ((got.double().cpu() - ref).abs() / (1 + ref.abs())).max().item()
            if not err < tol:
                return f"call {call}: {name} off by {err}"
        if not all(torch.equal(a, b) for a, b in zip(args, before)):
            return f"call {call}: an input changed"
    return "ok"


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_all_reduce_rmsnorm_operator(ranks2, compiled):
    assert ranks2.run(r_all_reduce_rmsnorm_op, compiled) == ["ok", "ok"]
