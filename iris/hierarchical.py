"""Scale-out: process groups that span several hosts, and collectives over them in two levels.

A symmetric heap is mapped with CUDA IPC, so an `iris.iris()` context lives on one host. Across hosts:

    local, cross = iris.node_groups()                 # this rank's node-local group, the group of equal local ranks
    tp = iris.iris(1 << 30, group=local)              # the heap, the device API and the catalog inside the node
    ctx = iris.multi_node(1 << 30)                    # a whole (multi-host) group, for collectives over it
    iris.collectives.all_reduce(ctx, grads)           # auto = "hierarchical" on a multi-node context

Hierarchical collectives (same signatures as iris.collectives'; sum/max/min), with N nodes of L ranks each:
- all_reduce: reduce-scatter inside the node through the heap (each local rank owns 1/L of the tensor, padded), an
  all-reduce of that slice across nodes through torch.distributed on the cross-node group (NCCL on GPUs, gloo on
  the CPU backend), an all-gather inside the node. Each rank sends 1/L of the tensor across the network.
- all_gather: all-gather across nodes of this rank's input (N slices), then inside the node (L x N slices), then a
  re-ordering into group-rank order.
- reduce_scatter: the input re-ordered by (local rank, node), reduce-scatter inside the node (each local rank gets
  N slices summed over its node), then a reduce-scatter across nodes (gloo, which has none: all-reduce, keep mine).
Costs: two heap collectives on L ranks plus one NCCL/gloo collective on N ranks, and one or two local copies. They
are host-driven sequences (not CUDA-graph capturable as one unit; on GPUs everything runs on the current stream).
No network transport of our own: the cross-node part is torch.distributed.
"""

import collections

import torch
import torch.distributed as dist

from . import collectives as _coll
from . import distributed, health
from . import replay as _replay
from .host import Iris

NodeGroups = collections.namedtuple("NodeGroups", "local cross")
VARIANTS = ("all_reduce", "all_gather", "reduce_scatter")  # the collectives with a "hierarchical" variant


def _hosts_layout(hosts, ranks):
    """{host: sorted global ranks on it}, hosts in order of first appearance, from a list of hosts by position in
    `ranks` (global ranks)."""
    nodes = {}
    for h, r in zip(hosts, ranks):
        nodes.setdefault(h, []).append(r)
    return {h: sorted(rs) for h, rs in nodes.items()}


def node_groups(mesh=None, local_dim=-1):
    """(this rank's node-local group, the cross-node group of the ranks with this rank's local index), as a
    NodeGroups(local, cross) of ProcessGroups.

    From the hostnames (mesh=None; collective over the world: an exchange of hostnames, then each rank creates its
    two groups with torch's use_local_synchronization, so only their members take part), or from a 2-D DeviceMesh:
    `local_dim` (name or index, default the last, TP-innermost as torchtitan/Megatron lay it out) is the node-local
    dimension and the other is the cross-node one; its locality is checked (collective over the local group).
    Hosts are told apart by $IRIS_HOSTNAME or the hostname (iris.spawn(nodes=...) simulates several)."""
    if mesh is None:
        distributed.init(torch.cuda.is_available() and _backend_is_cuda())
        world = dist.get_world_size()
        hosts = distributed.all_gather_object(distributed.hostname())
        nodes = _hosts_layout(hosts, range(world))
        mine = nodes[hosts[dist.get_rank()]]
        i = mine.index(dist.get_rank())
        cross = [rs[i] for rs in nodes.values() if len(rs) > i]
        return NodeGroups(distributed.subgroup(mine), distributed.subgroup(cross))
    if mesh.ndim != 2:
        raise ValueError(f"node_groups: expected a 2-D DeviceMesh (cross-node x node-local, e.g. (dp, tp)), got "
                         f"{mesh.ndim}-D {tuple(mesh.mesh.shape)}")
    names = list(getattr(mesh, "mesh_dim_names", None) or ())
    dim = names.index(local_dim) if isinstance(local_dim, str) and local_dim in names else local_dim
    if not isinstance(dim, int) or not -2 <= dim < 2:
        raise ValueError(f"node_groups: local_dim={local_dim!r}; the mesh's dims are {names or [0, 1]}")
    dim %= 2
    local, cross = mesh.get_group(dim), mesh.get_group(1 - dim)
    hosts = distributed.all_gather_object(distributed.hostname(), local)
    if len(set(hosts)) > 1:
        ranks = dist.get_process_group_ranks(local)
        raise RuntimeError(f"node_groups: the mesh's node-local dimension {names[dim] if names else dim} spans hosts "
                           f"{_hosts_layout(hosts, ranks)}: put the node-local dimension last (innermost) and make it "
                           f"no larger than the GPUs of one node")
    return NodeGroups(local, cross)


def _backend_is_cuda():
    from . import _backend

    return _backend.BACKEND == "cuda"


class MultiNodeContext:
    """A group over several hosts, for collectives: `local` is the Iris context of this rank's node (its heap),
    `cross` the ProcessGroup of the ranks with this rank's local index on every node. Ranks are group ranks.

    Creating it is collective over the group (an exchange of hostnames, then the node-local context, collective over
    the node, and the cross-node group). Every node must hold the same number of the group's ranks. It has no heap of
    its own over the whole group: device RMA across hosts is not offered (docs/multi-node.md)."""

    multi_node = True

    def __init__(self, heap_size=1 << 30, backend=None, group=None):
        use_cuda = (backend or ("cuda" if _backend_is_cuda() else "cpu")).lower() == "cuda"
        distributed.init(use_cuda)
        self.group = distributed.resolve_group(group)
        self.global_ranks = dist.get_process_group_ranks(self.group)
        self.cur_rank, self.num_ranks = self.global_ranks.index(dist.get_rank()), len(self.global_ranks)
        self.hosts = distributed.all_gather_object(distributed.hostname(), self.group)
        nodes = _hosts_layout(self.hosts, self.global_ranks)
        sizes = {h: len(rs) for h, rs in nodes.items()}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"iris.multi_node: the group has different numbers of ranks per host ({sizes}); "
                             f"hierarchical collectives need the same number on every node")
        me = dist.get_rank()
        mine = nodes[self.hosts[self.cur_rank]]
        self.local_rank, self.local_size, self.num_nodes = mine.index(me), len(mine), len(nodes)
        self.local = Iris(heap_size, backend, group=mine)  # collective over this node's ranks
        self.cross_ranks = [rs[self.local_rank] for rs in nodes.values()]
        self.cross = distributed.subgroup(self.cross_ranks)
        self.node = sorted(self.cross_ranks).index(me)  # this rank's cross-group rank: its node's index here
        group_rank = {g: r for r, g in enumerate(self.global_ranks)}
        # order[i * N + j]: the group rank of local rank i of the node that is cross-group rank j of cross group i
        order = []
        for i in range(self.local_size):
            members = sorted(rs[i] for rs in nodes.values())
            order += [group_rank[g] for g in members]
        self.order = torch.tensor(order, dtype=torch.int64, device=self.local.get_device())
        self.backend, self.device, self.handle = self.local.backend, self.local.device, None
        self.replay = _replay.ReplayCache(False)  # nothing to replay: no kernel spans the group

    @property
    def _broken(self):
        """A multi-node context is broken when its node's heap context is (iris/health.py)."""
        return self.local._broken

    @_broken.setter
    def _broken(self, value):
        self.local._broken = value

    def get_rank(self):
        return self.cur_rank

    def get_num_ranks(self):
        return self.num_ranks

    def get_device(self):
        return self.device

    def is_symmetric(self, tensor):
        return False  # no heap spans the group

    def barrier(self):
        """Collective over the whole group: this rank's device work, then every rank (given up at once, as
        Iris.barrier is, when the rank pool reports a failed peer)."""
        if self.backend == "cuda":
            torch.cuda.synchronize(self.device)
        health.host_barrier(self.group)
        self.local.check_device_errors()

    def broadcast(self, value, source_rank=0, *, src=None):
        """`value` as held by group rank `source_rank` (or `src`), on every rank of the group (through the host)."""
        return distributed.broadcast_value(value, source_rank if src is None else src, self.group)

    def close(self):
        self.local.close()


def multi_node(heap_size=1 << 30, group=None, backend=None):
    """A MultiNodeContext over `group` (default: the world; any ProcessGroup, 1-D mesh, (mesh, dim) or rank list),
    which may span hosts: collectives over it run hierarchically (heap inside each node, torch.distributed across).
    Collective over the group; `heap_size` is each node-local heap's."""
    return MultiNodeContext(heap_size, backend, group)


# ---------------------------------------------------------------------------------------------- collectives
def _levels(ctx, name, variant):
    """(node-local Iris context, cross-node group or None) of a hierarchical call."""
    if isinstance(ctx, MultiNodeContext):
        if variant not in ("auto", "hierarchical", "nccl") or variant == "hierarchical" and name not in VARIANTS:
            raise ValueError(f"{name}: variant {variant!r} moves data through one heap, but this context spans "
                             f"{ctx.num_nodes} hosts ({sorted(set(ctx.hosts))}); use 'hierarchical' (or 'auto') or "
                             f"'nccl', or run {variant!r} on ctx.local")
        return ctx.local, ctx.cross
    if not isinstance(ctx, Iris):
        raise TypeError(f"{name}: expected an Iris or MultiNodeContext, got {type(ctx).__name__}")
    return ctx, None  # one node: the hierarchy has one level


def _check(ctx, name, variant, op, tensors):
    _coll._check(ctx, name, "nccl" if variant == "nccl" else "hierarchical", op, tensors, {})
    return variant == "nccl"


def _order(ctx):
    """Group ranks by (local rank, node) position; a plain context: its own order."""
    if isinstance(ctx, MultiNodeContext):
        return ctx.order
    return torch.arange(ctx.get_num_ranks(), device=ctx.get_device())


def _buffers(local, name, dtype, **sizes):
    """Heap buffers (zeroed once) of the node-local context for this call's sizes."""
    key = ("hierarchical", name, dtype, tuple(sorted(sizes.items())))
    return local.workspace(key, lambda c: {k: c.zeros(max(v, 1), dtype=dtype)[:v] for k, v in sizes.items()})


def all_reduce(ctx, tensor, op="sum", variant="hierarchical", out=None, config=None, async_op=False):
    """Collective over ctx's group: `out` (default: in place) <- `tensor` reduced over every rank. Synchronous with
    respect to the host (async_op returns a completed Work)."""
    local, cross = _levels(ctx, "all_reduce", variant)
    out = tensor if out is None else out
    nccl = _check(ctx, "all_reduce", variant, op, {"tensor": tensor, "out": out})
    if out.shape != tensor.shape:
        raise ValueError(f"all_reduce: out has shape {tuple(out.shape)}, tensor {tuple(tensor.shape)}")
    if nccl or cross is None:
        if nccl:
            if out is not tensor:
                out.copy_(tensor)
            dist.all_reduce(out, op=_coll._nccl_op(op), group=ctx.group)
        else:
            _coll.all_reduce(local, tensor, op, out=out, config=config)
        return _coll.Work() if async_op else out
    n, size = tensor.numel(), local.get_num_ranks()
    if n == 0:
        return _coll.Work() if async_op else out
    if size == 1:
        if out is not tensor:
            out.copy_(tensor)
        dist.all_reduce(out, op=_coll._nccl_op(op), group=cross)
        return _coll.Work() if async_op else out
    c = -(-n // size)
    ws = _buffers(local, "all_reduce", tensor.dtype, full=size * c, part=c)
    ws["full"][:n].copy_(tensor.reshape(-1))
    _coll.reduce_scatter(local, ws["part"], ws["full"], op=op, config=config)  # my 1/L of the node's sum
    dist.all_reduce(ws["part"], op=_coll._nccl_op(op), group=cross)  # ... over the nodes
    _coll.all_gather(local, ws["full"], ws["part"], config=config)
    out.view(-1).copy_(ws["full"][:n])
    return _coll.Work() if async_op else out


def all_gather(ctx, output, input, variant="hierarchical", config=None, async_op=False):
    """Collective: output (world * input.numel()) <- every rank's input, group rank r's at slice r."""
    local, cross = _levels(ctx, "all_gather", variant)
    nccl = _check(ctx, "all_gather", variant, "sum", {"output": output, "input": input})
    w, n = ctx.get_num_ranks(), input.numel()
    if output.numel() != w * n:
        raise ValueError(f"all_gather: output has {output.numel()} elements, expected world * input = {w} * {n}")
    if nccl:
        distributed.all_gather_single(output.view(-1), input.reshape(-1), group=ctx.group)
    elif cross is None:
        _coll.all_gather(local, output, input, config=config)
    else:
        nodes, size = ctx.num_nodes, local.get_num_ranks()
        ws = _buffers(local, "all_gather", input.dtype, mid=nodes * n, full=size * nodes * n)
        distributed.all_gather_single(ws["mid"], input.reshape(-1), group=cross)  # my local index, every node
        if size == 1:
            ws["full"].copy_(ws["mid"])
        else:
            _coll.all_gather(local, ws["full"], ws["mid"], config=config)  # ... every local index
        output.view(w, n).index_copy_(0, _order(ctx), ws["full"].view(w, n))
    return _coll.Work() if async_op else output


def reduce_scatter(ctx, output, input, op="sum", variant="hierarchical", config=None, async_op=False):
    """Collective: output (this rank's slice) <- slice `rank` of input (world * output.numel()) reduced over ranks."""
    local, cross = _levels(ctx, "reduce_scatter", variant)
    nccl = _check(ctx, "reduce_scatter", variant, op, {"output": output, "input": input})
    w, n = ctx.get_num_ranks(), output.numel()
    if input.numel() != w * n:
        raise ValueError(f"reduce_scatter: input has {input.numel()} elements, expected world * output = {w} * {n}")
    if nccl:
        _cross_reduce_scatter(ctx.backend, output.view(-1), input.reshape(-1), op, ctx.group, ctx.get_rank())
    elif cross is None:
        _coll.reduce_scatter(local, output, input, op=op, config=config)
    else:
        nodes, size = ctx.num_nodes, local.get_num_ranks()
        ws = _buffers(local, "reduce_scatter", input.dtype, xp=w * n, mid=nodes * n)
        torch.index_select(input.reshape(w, n), 0, _order(ctx), out=ws["xp"].view(w, n))  # by (local rank, node)
        if size == 1:
            ws["mid"].copy_(ws["xp"])
        else:
            _coll.reduce_scatter(local, ws["mid"], ws["xp"], op=op, config=config)  # my local index, node-summed
        _cross_reduce_scatter(ctx.backend, output.view(-1), ws["mid"], op, cross, ctx.node)
    return _coll.Work() if async_op else output


def _cross_reduce_scatter(backend, out, x, op, group, rank):
    """reduce_scatter_tensor over `group` (NCCL); gloo has none: all-reduce a copy and keep slice `rank`."""
    if backend == "cuda":
        dist.reduce_scatter_tensor(out, x, op=_coll._nccl_op(op), group=group)
        return
    y = x.clone()
    dist.all_reduce(y, op=_coll._nccl_op(op), group=group)
    out.copy_(y[rank * out.numel():(rank + 1) * out.numel()])
