"""Contexts over process groups (issue 28): 4 ranks as 2 groups of 2, block ({0,1},{2,3}) and strided ({0,2},{1,3}),
both groups working at once on different data; 2 simulated nodes x 2 for the hierarchical collectives; bad input.

Sub-group contexts are created once per rank process and cached here at module level (the rank processes import this
module by name); each test allocates inside their scratch() scopes."""

import contextlib
import os
import zlib

import pytest
import torch
import triton
import triton.language as tl
from conftest import ON_GPU, gpu_per_rank

import fused_ops
import iris
from fused_ops import reference

LAYOUTS = {"block": lambda r: [0, 1] if r < 2 else [2, 3], "strided": lambda r: [0, 2] if r % 2 == 0 else [1, 3]}
SUB_HEAP = 8 << 20
_contexts = {}  # per rank process: layout -> Iris context over this rank's group


def group_ctx(world_ctx, layout):
    """This rank's context over its group of `layout` (collective over the world the first time: every rank of the
    pool calls it for the same layout, each creating the context of its own group)."""
    if layout not in _contexts:
        _contexts[layout] = iris.iris(SUB_HEAP, group=LAYOUTS[layout](world_ctx.get_rank()))
    return _contexts[layout]


@contextlib.contextmanager
def simulated_hosts(name):
    """This rank's host identity set for the duration (the pool's ranks otherwise share one host)."""
    saved = os.environ.get("IRIS_HOSTNAME")
    os.environ["IRIS_HOSTNAME"] = name
    try:
        yield
    finally:
        if saved is None:
            del os.environ["IRIS_HOSTNAME"]
        else:
            os.environ["IRIS_HOSTNAME"] = saved


def multi_ctx(world_ctx, hosts):
    """iris.multi_node over the world with 2 simulated hosts: "block" = {0,1},{2,3}; "strided" = {0,2},{1,3}."""
    key = ("multi", hosts)
    if key not in _contexts:
        r = world_ctx.get_rank()
        with simulated_hosts(f"sim{r // 2 if hosts == 'block' else r % 2}"):
            _contexts[key] = iris.multi_node(4 << 20)
    return _contexts[key]


def data(layout, seed, global_rank, shape, dtype=torch.float64):
    """Deterministic per (layout, seed, global rank): every rank can rebuild any peer's data."""
    g = torch.Generator().manual_seed(zlib.crc32(repr((layout, seed, global_rank)).encode()))  # not hash(): salted
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


# ---------------------------------------------------------------------------------------------- device ops
@triton.jit
def _rma_kernel(src, recv, put_dst, loaded, got, cur_rank, world_size, heap_bases, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    peer = (cur_rank + 1) % world_size
    iris.store(recv + cur_rank * BLOCK + offs, tl.load(src + offs), cur_rank, peer, heap_bases)
    iris.put(src + offs, put_dst + offs, cur_rank, peer, heap_bases)
    tl.store(loaded + offs, iris.load(src + offs, cur_rank, peer, heap_bases))
    iris.get(src + offs, got + offs, cur_rank, peer, heap_bases)


@triton.jit
def _atomic_kernel(words, olds, cur_rank, world_size, heap_bases):
    """words: [add counter, xchg slot, cas slot, max slot] on every rank."""
    for r in range(world_size):
        iris.atomic_add(words, cur_rank + 1, cur_rank, r, heap_bases, sem="relaxed", scope="sys")
        iris.atomic_max(words + 3, cur_rank + 10, cur_rank, r, heap_bases, sem="relaxed", scope="sys")
    peer = (cur_rank + 1) % world_size
    iris.atomic_xchg(words + 1, cur_rank + 100, cur_rank, peer, heap_bases, sem="relaxed", scope="sys")
    tl.store(olds, iris.atomic_cas(words + 2, 0, cur_rank + 1, cur_rank, 0, heap_bases, sem="acq_rel", scope="sys"))


def r_device_ops(world_ctx, layout):
    ctx = group_ctx(world_ctx, layout)
    w, r, B = ctx.get_num_ranks(), ctx.get_rank(), 16
    g = ctx.global_ranks
    with ctx.scratch():
        for call in range(2):  # fresh data, poisoned outputs, twice
            src = ctx.as_symmetric(data(layout, call, g[r], (B,), torch.float32))
            recv = ctx.full((w * B,), -7.0, dtype=torch.float32)
            put_dst = ctx.full((B,), -7.0, dtype=torch.float32)
            dev = ctx.get_device()
            loaded, got = torch.full((B,), -7.0, device=dev), torch.full((B,), -7.0, device=dev)
            words = ctx.zeros(4, dtype=torch.int32)
            olds = torch.full((1,), -1, dtype=torch.int32, device=dev)
            ctx.barrier()
            _rma_kernel[(1,)](src, recv, put_dst, loaded, got, r, w, ctx.get_heap_bases(), BLOCK=B)
            _atomic_kernel[(1,)](words, olds, r, w, ctx.get_heap_bases())
            ctx.barrier()
            prev, nxt = g[(r - 1) % w], g[(r + 1) % w]
            want = {"recv": (recv[((r - 1) % w) * B:((r - 1) % w + 1) * B], data(layout, call, prev, (B,))),
                    "put": (put_dst, data(layout, call, prev, (B,))),
                    "load": (loaded, data(layout, call, nxt, (B,))), "get": (got, data(layout, call, nxt, (B,)))}
            for name, (out, ref) in want.items():
                err = (out.double().cpu() - ref.float().double()).abs().max().item()
                if err != 0:
                    return f"call {call} {name}: max error {err}"
            olds_all = [ctx.broadcast(int(olds.item()), s) for s in range(w)]  # cas on group rank 0's word
            expect = [w * (w + 1) // 2, (r - 1) % w + 100, w - 1 + 10]
            if [int(words[i]) for i in (0, 1, 3)] != expect:
                return f"call {call} atomics: {words.tolist()}, expected add/xchg/max {expect}"
            winner = [s for s in range(w) if olds_all[s] == 0]
            if len(winner) != 1 or any(o != winner[0] + 1 for o in olds_all if o) or \
                    r == 0 and int(words[2]) != winner[0] + 1:
                return f"call {call} cas: olds {olds_all}, word {int(words[2])}"
            ctx.barrier()
    return "ok"


@pytest.mark.parametrize("layout", ["block", "strided"])
def test_device_ops_on_two_groups_at_once(ranks4, layout):
    assert ranks4.run(r_device_ops, layout) == ["ok"] * 4


# ---------------------------------------------------------------------------------------------- host side
REDUCE = {"sum": lambda t: t.sum(0), "max": lambda t: t.amax(0), "min": lambda t: t.amin(0)}


def r_host_collectives(world_ctx, layout, nccl):
    ctx = group_ctx(world_ctx, layout)
    w, r, g = ctx.get_num_ranks(), ctx.get_rank(), ctx.global_ranks
    if ctx.broadcast(f"from {g[1]}", 1) != f"from {g[1]}":
        return "broadcast of an object"
    t = ctx.broadcast(torch.tensor([float(g[r])]), 1)
    if t.item() != g[1]:
        return f"broadcast of a tensor: {t.item()}, expected {g[1]}"
    variants = {"all_reduce": ["push", "two_shot", "one_shot", "ring"], "all_gather": ["push", "direct"],
                "reduce_scatter": ["push", "pull"], "broadcast": ["auto"], "all_to_all": ["auto"]}
    if nccl:
        variants = {k: ["nccl"] for k in variants}
    n = 37
    with ctx.scratch():
        for call in range(2):
            xs = torch.stack([data(layout, call, gr, (w * n,)) for gr in g])  # every rank's input, float64
            x = ctx.as_symmetric(xs[r].float())
            for v in variants["all_reduce"]:
                for op in ("sum", "max"):
                    out = ctx.full((w * n,), float("nan"), dtype=torch.float32)
                    iris.collectives.all_reduce(ctx, x, op=op, variant=v, out=out)
                    if not torch.allclose(out.double().cpu(), REDUCE[op](xs.float().double()), atol=1e-5):
                        return f"all_reduce {v} {op} call {call}"
            for v in variants["all_gather"]:
                out = ctx.full((w, n), float("nan"), dtype=torch.float32)
                iris.collectives.all_gather(ctx, out, x[:n].clone() if v == "push" else x[:n], variant=v)
                if not torch.equal(out.double().cpu(), xs[:, :n].float().double()):
                    return f"all_gather {v} call {call}"
            for v in variants["reduce_scatter"]:
                out = torch.full((n,), float("nan"), device=ctx.get_device())
                iris.collectives.reduce_scatter(ctx, out, x, op="min", variant=v)
                if not torch.allclose(out.double().cpu(), REDUCE["min"](xs.float().double())[r * n:(r + 1) * n]):
                    return f"reduce_scatter {v} call {call}"
            b = ctx.as_symmetric(xs[r].float())
            iris.collectives.broadcast(ctx, b, src=1, variant=variants["broadcast"][0])
            if not torch.equal(b.cpu(), xs[1].float()):
                return f"broadcast call {call}"
            a2a = ctx.full((w * n,), float("nan"), dtype=torch.float32)
            iris.collectives.all_to_all(ctx, a2a, x, variant=variants["all_to_all"][0])
            if not torch.equal(a2a.view(w, n).cpu(), xs[:, r * n:(r + 1) * n].float()):
                return f"all_to_all call {call}"
            ctx.barrier()
    return "ok"


@pytest.mark.parametrize("layout", ["block", "strided"])
def test_host_collectives_on_two_groups_at_once(ranks4, layout):
    assert ranks4.run(r_host_collectives, layout, False) == ["ok"] * 4


@gpu_per_rank(4)
def test_nccl_variants_run_over_the_group(ranks4):
    assert ranks4.run(r_host_collectives, "strided", True) == ["ok"] * 4


# ---------------------------------------------------------------------------------------------- catalog, torch ops, nn
# Every variant of every op that runs here in float32 (baselines that need one GPU per rank: not where ranks share one)
CATALOG = {op: [v for v in fused_ops.list_variants(op, iris.BACKEND, "float32")
                if not (ON_GPU and fused_ops.get(op, v).one_gpu_per_rank)] for op in fused_ops.list_ops()}


def r_catalog(world_ctx, layout):
    ctx = group_ctx(world_ctx, layout)
    w, r = ctx.get_num_ranks(), ctx.get_rank()
    seed = 1 + ctx.global_ranks[0]  # the two groups compute different problems
    m, n, k = 24, 16, 32
    with ctx.scratch():
        for op, variants in CATALOG.items():
            c = ctx.zeros(*reference.local_shapes(op, m, n, k, w)[2], dtype=torch.float32)
            for call, v in enumerate(variants):
                a, b, ref = reference.make_inputs(op, seed + call, w, r, m, n, k, torch.float32, ctx.get_device())
                c.fill_(float("nan"))
                ctx.barrier()
                getattr(fused_ops, op)(ctx, a, b, c, variant=v)
                err = reference.rel_error(c, ref)
                if not err <= reference.TOLERANCE[torch.float32]:
                    return f"{op}/{v}: relative error {err}"
        ctx.barrier()
    return "ok"


@pytest.mark.parametrize("layout", ["block", "strided"])
def test_catalog_variants_on_two_groups_at_once(ranks4, layout):
    assert ranks4.run(r_catalog, layout) == ["ok"] * 4


def r_torch_ops_and_layers(world_ctx, layout):
    """fused_ops.library operators and a TP MLP of fused_ops.nn layers, forward and backward, vs float64."""
    from torch import nn

    from fused_ops import library
    from fused_ops.nn import ColumnParallelLinear, RowParallelLinear

    ctx = group_ctx(world_ctx, layout)
    w, r, seed, dev = ctx.get_num_ranks(), ctx.get_rank(), 7 + ctx.global_ranks[0], ctx.get_device()
    a, b, ref = reference.make_inputs("gemm_all_reduce", seed, w, r, 16, 8, 16, torch.float32, dev)
    y = library.gemm_all_reduce(ctx, a, b)
    if not reference.rel_error(y, ref) < 1e-4:
        return "library.gemm_all_reduce"
    a, b, ref = reference.make_inputs("all_gather_gemm", seed, w, r, 16, 8, 16, torch.float32, dev)
    if not reference.rel_error(library.all_gather_gemm(ctx, a, b), ref) < 1e-4:
        return "library.all_gather_gemm"
    hidden, tokens = 8, 8
    torch.manual_seed(seed)
    full = nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.GELU(), nn.Linear(2 * hidden, hidden)).to(dev)
    tp = nn.Sequential(ColumnParallelLinear(ctx, full[0], gather_input=True), nn.GELU(),
                       RowParallelLinear(ctx, full[2], reduce="scatter"))
    ref = full.double()
    rows = slice(r * tokens // w, (r + 1) * tokens // w)
    for step in range(2):
        x = torch.randn(tokens, hidden, generator=torch.Generator().manual_seed(seed * 10 + step)).to(dev)
        xr = x.double().requires_grad_()
        xt = x[rows].clone().requires_grad_()
        want, got = ref(xr), tp(xt)
        gy = torch.randn(want.shape, generator=torch.Generator().manual_seed(seed * 10 + step + 5)).to(dev)
        want.backward(gy.double())
        got.backward(gy[rows])
        f1 = slice(r * 2 * hidden // w, (r + 1) * 2 * hidden // w)
        for name, t, want_t in [("y", got, want[rows]), ("x.grad", xt.grad, xr.grad[rows]),
                                ("fc1.weight.grad", tp[0].weight.grad, ref[0].weight.grad[f1]),
                                ("fc2.weight.grad", tp[2].weight.grad, ref[2].weight.grad[:, f1]),
                                ("fc2.bias.grad", tp[2].bias.grad, ref[2].bias.grad)]:
            err = ((t.double() - want_t).norm() / want_t.norm()).item()
            if not err < 1e-4 * (30 if ON_GPU else 1):  # TF32-free fp32 GEMMs still round differently on GPUs
                return f"step {step}: {name} relative error {err}"
        tp.zero_grad()
        ref.zero_grad()
    ctx.barrier()
    return "ok"


@gpu_per_rank(4)  # RowParallelLinear's bias gradient is summed with torch.distributed over the group (NCCL)
@pytest.mark.parametrize("layout", ["block", "strided"])
def test_torch_ops_and_tp_layers_on_two_groups_at_once(ranks4, layout):
    assert ranks4.run(r_torch_ops_and_layers, layout) == ["ok"] * 4


# ---------------------------------------------------------------------------------------------- hierarchical
def r_hierarchical(world_ctx, hosts):
    ctx = multi_ctx(world_ctx, hosts)
    w, r, dev = ctx.get_num_ranks(), ctx.get_rank(), ctx.get_device()
    if (ctx.num_nodes, ctx.local_size) != (2, 2):
        return f"layout {ctx.num_nodes} x {ctx.local_size}"
    for call, n in enumerate((1, 7, 300, 7)):  # odd sizes; the repeated size reuses its workspace
        for op in ("sum", "max", "min"):
            xs = torch.stack([data(hosts + op, call, q, (w * n,)) for q in range(w)])
            x = xs[r].float().to(dev)
            out = torch.full_like(x, float("nan"))
            iris.collectives.all_reduce(ctx, x, op=op, out=out)  # auto -> hierarchical on a multi-node context
            if not torch.allclose(out.double().cpu(), REDUCE[op](xs.float().double()), atol=1e-5):
                return f"all_reduce {op} n={n}"
            iris.collectives.all_reduce(ctx, x, op=op, variant="hierarchical")  # in place
            if not torch.equal(x, out):
                return f"all_reduce in place {op} n={n}"
            rs = torch.full((n,), float("nan"), device=dev)
            iris.collectives.reduce_scatter(ctx, rs, xs[r].float().to(dev), op=op)
            if not torch.allclose(rs.double().cpu(), REDUCE[op](xs.float().double())[r * n:(r + 1) * n], atol=1e-5):
                return f"reduce_scatter {op} n={n}"
        ag = torch.full((w, n), float("nan"), device=dev)
        iris.collectives.all_gather(ctx, ag, xs[r, :n].float().to(dev), variant="hierarchical")
        if not torch.equal(ag.cpu(), xs[:, :n].float()):
            return f"all_gather n={n}"
    ii = torch.tensor([r + 1] * 3, dtype=torch.int32, device=dev)
    iris.collectives.all_reduce(ctx, ii, op="max")
    if ii.tolist() != [w] * 3:
        return f"int32 all_reduce {ii.tolist()}"
    return "ok"


@gpu_per_rank(4)
@pytest.mark.parametrize("hosts", ["block", "strided"])
def test_hierarchical_collectives_over_two_simulated_nodes(ranks4, hosts):
    assert ranks4.run(r_hierarchical, hosts) == ["ok"] * 4


# ---------------------------------------------------------------------------------------------- bad input
def _error(fn):
    try:
        fn()
    except Exception as err:  # noqa: BLE001 - the test compares type and message
        return type(err).__name__, str(err)
    return None


def r_bad_input(world_ctx):
    r = world_ctx.get_rank()
    pair = group_ctx(world_ctx, "block")
    strided = group_ctx(world_ctx, "strided")
    found = {}
    found["not in group"] = _error(lambda: iris.iris(SUB_HEAP, group=[0, 1] if r >= 2 else [2, 3]))
    if "pg" not in _contexts:  # plain new_group: collective over the world, non-members get NON_GROUP_MEMBER
        import torch.distributed as dist

        _contexts["pg"] = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    found["not in ProcessGroup"] = _error(lambda: iris.iris(SUB_HEAP, group=_contexts["pg"][0 if r >= 2 else 1]))
    with simulated_hosts(f"node{r // 2}"):  # every rank calls: each gets the same refusal, none hangs
        found["several hosts"] = _error(lambda: iris.iris(SUB_HEAP))
    found["heap sizes"] = _error(lambda: iris.iris((4 << 20) * (1 + r % 2), group=LAYOUTS["block"](r)))
    mesh = _mesh()
    found["2-D mesh"] = _error(lambda: iris.iris(SUB_HEAP, group=mesh))
    with pair.scratch(), strided.scratch():
        foreign = strided.zeros(8, dtype=torch.float32)
        found["collective, other heap"] = _error(
            lambda: iris.collectives.all_reduce(pair, foreign, variant="two_shot"))
        a = torch.ones(4, 4, device=pair.get_device())
        c = strided.zeros(4, 4, dtype=torch.float32)
        found["catalog op, other heap"] = _error(
            lambda: fused_ops.gemm_all_reduce(pair, a[:, :2].contiguous(), a[:2], c, variant="one_shot"))
        found["not on any heap"] = _error(lambda: fused_ops.gemm_all_reduce(pair, a[:, :2].contiguous(), a[:2],
                                                                            torch.zeros_like(a), variant="one_shot"))
    found["mesh dim"] = _error(lambda: iris.iris(SUB_HEAP, group=(mesh, "pp")))
    found["heap variant on a multi-node context"] = _error(
        lambda: iris.collectives.all_reduce(multi_ctx(world_ctx, "block"), torch.ones(3, device=pair.get_device()),
                                            variant="two_shot"))
    world_ctx.barrier()
    return found


EXPECT = {
    "not in group": ("ValueError", "is not in the group"),
    "not in ProcessGroup": ("ValueError", "is not in this group"),
    "several hosts": ("RuntimeError", ("spans 2 hosts (host 'node0': group rank 0 (global 0), group rank 1 (global 1); "
                                       "host 'node1': group rank 2 (global 2), group rank 3 (global 3))")),
    "heap sizes": ("ConsistencyError", "heap_size differs across ranks"),
    "2-D mesh": ("ValueError", "2-D DeviceMesh"),
    "mesh dim": ("ValueError", "the mesh's dims are ['dp', 'tp']"),
    "collective, other heap": ("ValueError", "from another context's heap"),
    "catalog op, other heap": ("ValueError", "from another context's heap"),
    "not on any heap": ("ValueError", "c must live on the symmetric heap"),
    "heap variant on a multi-node context": ("ValueError", "use 'hierarchical' (or 'auto') or 'nccl'"),
}


@gpu_per_rank(4)
def test_bad_input_gets_a_clear_error_on_every_rank(ranks4):
    for found in ranks4.run(r_bad_input):
        for case, (kind, text) in EXPECT.items():
            assert found[case] is not None, f"{case}: no error"
            assert found[case][0] == kind and text in found[case][1], (case, found[case])


def r_overlapping(world_ctx):
    """Contexts over overlapping groups ({0,1} and {1,2}; rank 1 in both) each have a heap of their own: one
    context's traffic never lands in the other's, whatever their allocation offsets."""
    r = world_ctx.get_rank()
    key = "overlap"
    if key not in _contexts:
        _contexts[key] = [iris.iris(1 << 20, group=g) for g in ([0, 1], [1, 2]) if r in g]
    ctxs = _contexts[key]
    outs = []
    for i, ctx in enumerate(ctxs):
        with ctx.scratch():
            x = ctx.full((5,), float(ctx.global_ranks[ctx.get_rank()] + 10 * i), dtype=torch.float32)
            iris.collectives.all_reduce(ctx, x, variant="two_shot")  # peers read this heap at the same offsets
            outs.append(x[0].item())
    bases = [c.heap.bases[c.get_rank()] for c in ctxs]
    return outs, len(set(bases)) == len(bases)


def test_overlapping_groups_have_separate_heaps(ranks4):
    res = ranks4.run(r_overlapping)
    # {0,1} (i = 0 on ranks 0, 1): 0 + 1 = 1; {1,2}: on rank 1 it is its second context (i = 1), on rank 2 its first
    assert res[0] == ([1.0], True)
    assert res[1] == ([1.0, 1 + 10 + 2], True)
    assert res[2] == ([1 + 10 + 2], True)
    assert res[3] == ([], True)


# ---------------------------------------------------------------------------------------------- launchers, example
def r_example(world_ctx):
    """examples/tp_dp_2d.py's training step (TP in a simulated node, DP across through the hierarchical all-reduce)
    against one process: losses and every gradient, 2 SGD steps."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "tp_dp_2d.py")
    spec = importlib.util.spec_from_file_location("tp_dp_2d", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    ctx = multi_ctx(world_ctx, "block")
    with simulated_hosts(f"sim{world_ctx.get_rank() // 2}"):  # the DP group's hosts are looked up on creation
        return example.train(ctx, steps=2)


@gpu_per_rank(4)
def test_tp_dp_2d_example_matches_one_process(ranks4):
    assert all(err < 1e-4 for err in ranks4.run(r_example))


def r_where(ctx):
    x = torch.tensor([float(ctx.get_rank() + 1)], device=ctx.get_device())
    iris.collectives.all_reduce(ctx, x)
    return (os.environ["IRIS_HOSTNAME"], os.environ["LOCAL_RANK"], os.environ["LOCAL_WORLD_SIZE"],
            os.environ["GROUP_RANK"], ctx.num_nodes, ctx.local_size, x.item())


@gpu_per_rank(2)
def test_spawn_simulates_nodes():
    res = iris.spawn(r_where, 2, heap_size=1 << 20, nodes=2)
    assert [r[1:] for r in res] == [("0", "1", "0", 2, 1, 3.0), ("0", "1", "1", 2, 1, 3.0)]
    assert res[0][0] != res[1][0]
    with pytest.raises(ValueError, match="divides world_size"):
        iris.spawn(r_where, 3, nodes=2)


def _mesh():
    from torch.distributed.device_mesh import init_device_mesh

    if "mesh" not in _contexts:  # collective over the world: every rank of the pool builds it at the same call
        # a "cpu" mesh on GPUs too: only its groups are used, and ranks sharing a GPU must not start NCCL
        _contexts["mesh"] = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    return _contexts["mesh"]


def r_node_groups(world_ctx):
    import torch.distributed as dist

    r, mesh = world_ctx.get_rank(), _mesh()
    ranks = dist.get_process_group_ranks
    with simulated_hosts(f"sim{r // 2}"):
        local, cross = iris.node_groups()
        from_mesh = iris.node_groups(mesh, local_dim="tp")
        by_index = iris.node_groups(mesh)  # the last dim is the node-local one by default
    with simulated_hosts(f"sim{r % 2}"):  # tp = {0,1} now spans both hosts
        refused = _error(lambda: iris.node_groups(mesh, local_dim="tp"))
    if "mesh ctx" not in _contexts:  # contexts over a mesh dimension: (mesh, name) and a 1-D slice
        _contexts["mesh ctx"] = (iris.iris(1 << 20, group=(mesh, "tp")), iris.iris(1 << 20, group=mesh["dp"]))
    tp, dp = _contexts["mesh ctx"]
    with tp.scratch():
        x = tp.full((3,), float(r), dtype=torch.float32)
        iris.collectives.all_reduce(tp, x, variant="two_shot")
        summed = x[0].item()
    return (ranks(local), ranks(cross), ranks(from_mesh.local), ranks(from_mesh.cross), ranks(by_index.local),
            refused[0], "put the node-local dimension last" in refused[1], tp.global_ranks, dp.global_ranks,
            (tp.get_rank(), dp.get_rank()), summed)


def test_node_groups_from_hostnames_and_from_a_mesh(ranks4):
    res = ranks4.run(r_node_groups)
    for r, row in enumerate(res):
        local, cross = ([0, 1] if r < 2 else [2, 3]), ([0, 2] if r % 2 == 0 else [1, 3])
        assert row == (local, cross, local, cross, local, "RuntimeError", True, local, cross, (r % 2, r // 2),
                       float(sum(local)))


# ---------------------------------------------------------------------------------------------- benchmark
@gpu_per_rank(4)
def test_groups_benchmark_smoke(tmp_path):
    """benchmarks/groups.py --smoke end to end (its SMOKE: gemm_all_reduce and all_gather_gemm with torch_nccl and
    their default fused variant at 32x32x32 on both layouts, the three collectives at 4 KiB, one timed call): both
    CSVs written, every row checked correct and stamped with device, date, commit and command."""
    import csv
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "benchmarks/groups.py", "--smoke", "--out", str(tmp_path)], cwd=root,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": root})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name, key, kinds in (("groups_interference.csv", "op", 2), ("groups_hierarchical.csv", "collective", 3)):
        rows = list(csv.DictReader(open(tmp_path / name)))
        assert rows, name
        assert all(r["correct"] == "True" for r in rows), rows
        assert all(r[c] for r in rows for c in ("device", "date", "commit", "command")), rows
        assert len({r[key] for r in rows}) == kinds, rows
    rows = list(csv.DictReader(open(tmp_path / "groups_interference.csv")))
    assert {(r["layout"], r["ranks"]) for r in rows} == {("block", "0 1"), ("block", "2 3"), ("strided", "0 2"),
                                                         ("strided", "1 3")}
    assert all(float(r["alone_us"]) > 0 and float(r["together_us"]) > 0 for r in rows), rows
    hier = list(csv.DictReader(open(tmp_path / "groups_hierarchical.csv")))
    assert {r["variant"] for r in hier} == {"nccl", "hierarchical", "flat"}, hier
