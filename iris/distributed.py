"""Process-group bootstrap: reuse an existing torch.distributed group, or start one under torchrun / iris.spawn
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment), under mpirun (mpi4py), or as a single rank."""

import atexit
import contextlib
import os
import socket

import torch
import torch.distributed as dist

_MPI_ENV = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "SLURM_PROCID_MPI")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launched():
    """Whether a launcher (torchrun, mpirun) started this process as one rank of a job, rather than a script that
    should start its own ranks (iris.spawn)."""
    return "RANK" in os.environ or _under_mpi()


def _under_mpi():
    return os.environ.get("IRIS_BOOTSTRAP") == "mpi" or any(k in os.environ for k in _MPI_ENV)


def _mpi_rendezvous():
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise RuntimeError("running under an MPI launcher, but mpi4py is not installed: "
                           "pip install 'iris-nvlink[mpi]'") from err
    comm = MPI.COMM_WORLD
    rank, world = comm.Get_rank(), comm.Get_size()
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)  # collective: every rank calls it once
    local_rank, single_node = node.Get_rank(), node.Get_size() == world
    node.Free()
    where = None
    if rank == 0:
        where = ("127.0.0.1" if single_node else socket.gethostname(), free_port())
    host, port = comm.bcast(where, root=0)
    return rank, world, local_rank, f"tcp://{host}:{port}"


def local_rank_of(rank):
    return int(os.environ.get("LOCAL_RANK", os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", rank)))


def device_index(local_rank):
    """The GPU of a rank: its local rank modulo the visible GPUs, or $IRIS_DEVICE where set (iris.spawn's simulated
    nodes number local ranks per node, but spread the ranks over the machine's GPUs)."""
    return int(os.environ.get("IRIS_DEVICE", local_rank)) % torch.cuda.device_count()


def init(use_cuda):
    """Make sure a default process group exists; return (rank, world_size, local_rank)."""
    if dist.is_initialized():
        rank, world = dist.get_rank(), dist.get_world_size()
        return rank, world, local_rank_of(rank)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local_rank, init_method = local_rank_of(rank), "env://"
    elif _under_mpi():
        rank, world, local_rank, init_method = _mpi_rendezvous()
    else:
        rank, world, local_rank, init_method = 0, 1, 0, f"tcp://127.0.0.1:{free_port()}"
    if use_cuda:
        torch.cuda.set_device(device_index(local_rank))
    backend = "cpu:gloo,cuda:nccl" if use_cuda else "gloo"
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world)
    atexit.register(_destroy_at_exit)  # the group is iris's: iris ends it
    return rank, world, local_rank


def _destroy_at_exit():
    """Local: end the default group init() started, before the interpreter exits (NCCL warns of leaked resources
    otherwise, and its heartbeat thread can outlive the store that rank 0 serves). Not where a context broke or the
    pool recorded a failed rank: peers may be gone or inside a collective that a teardown would wait on."""
    from . import health
    from .host import _live

    if not dist.is_initialized() or health.aborted_by() is not None or any(health.is_broken(c) for c in list(_live)):
        return
    with contextlib.suppress(Exception):
        dist.destroy_process_group()


def all_gather_object(obj, group=None):
    """Every rank's `obj` over `group` (default: the world), in group-rank order."""
    out = [None] * dist.get_world_size(group)
    dist.all_gather_object(out, obj, group=group)
    return out


# torch 2.13 renamed all_gather_into_tensor (same arguments); the GPU machine's torch 2.11 has only the old name.
all_gather_single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


# ---------------------------------------------------------------------------------------------- process groups
HOSTNAME_ENV = "IRIS_HOSTNAME"
_subgroups = {}  # sorted global ranks -> ProcessGroup made here (one per rank set and process)


def hostname():
    """This rank's host identity: $IRIS_HOSTNAME if set (iris.spawn(nodes=...) sets it to simulate several hosts on
    one machine), else the machine's hostname. Contexts are refused across different identities."""
    return os.environ.get(HOSTNAME_ENV) or socket.gethostname()


def subgroup(ranks):
    """The ProcessGroup over these global ranks, created once per process. Collective over those ranks only (torch's
    use_local_synchronization: the other ranks need not call it, in any order); call it only on its members."""
    key = tuple(sorted(int(r) for r in ranks))
    if len(set(key)) != len(key):
        raise ValueError(f"group ranks {list(ranks)} contain duplicates")
    world = dist.get_world_size()
    if not key or key[0] < 0 or key[-1] >= world:
        raise ValueError(f"group ranks {list(ranks)}: expected global ranks in 0..{world - 1}")
    if dist.get_rank() not in key:
        raise ValueError(f"global rank {dist.get_rank()} is not in the group {list(key)}: build a context or group "
                         f"only on the ranks it contains")
    if key == tuple(range(world)):
        return dist.group.WORLD
    if key not in _subgroups:
        _subgroups[key] = dist.new_group(list(key), use_local_synchronization=True)
    return _subgroups[key]


def resolve_group(group):
    """A ProcessGroup from what `iris.iris(group=...)` accepts: None (the default world group), a ProcessGroup, a
    1-D DeviceMesh, (DeviceMesh, dim name or index), or a list of global ranks. Raises if this rank is not in it, or
    for a multi-dimensional mesh without a dim."""
    from torch.distributed.device_mesh import DeviceMesh

    if group is None:
        return dist.group.WORLD
    if isinstance(group, DeviceMesh):
        if group.ndim != 1:
            names = getattr(group, "mesh_dim_names", None)
            raise ValueError(f"group is a {group.ndim}-D DeviceMesh {tuple(group.mesh.shape)} (dims {names}); a heap "
                             f"spans one of its dimensions: pass (mesh, dim_name), e.g. (mesh, {names[-1]!r}) or "
                             f"mesh[{names[-1]!r}]" if names else
                             f"group is a {group.ndim}-D DeviceMesh {tuple(group.mesh.shape)}; a heap spans one of "
                             f"its dimensions: pass (mesh, dim_index), e.g. (mesh, {group.ndim - 1})")
        return group.get_group()
    if isinstance(group, tuple) and len(group) == 2 and isinstance(group[0], DeviceMesh):
        mesh, dim = group
        names = list(getattr(mesh, "mesh_dim_names", None) or ())
        if isinstance(dim, str) and dim not in names:
            raise ValueError(f"(mesh, {dim!r}): the mesh's dims are {names}")
        if isinstance(dim, int) and not 0 <= dim < mesh.ndim:
            raise ValueError(f"(mesh, {dim}): the mesh has {mesh.ndim} dimension(s)")
        return mesh.get_group(dim)
    if isinstance(group, (list, tuple, range)):
        return subgroup(group)
    if isinstance(group, int) and group == dist.GroupMember.NON_GROUP_MEMBER:
        raise ValueError(f"global rank {dist.get_rank()} is not in this group (torch.distributed.new_group returned "
                         f"NON_GROUP_MEMBER here): create the context only on the group's ranks")
    if not isinstance(group, dist.ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, a DeviceMesh, (mesh, dim) or a list of ranks, got "
                        f"{type(group).__name__}")
    if dist.get_rank() not in dist.get_process_group_ranks(group):
        raise ValueError(f"global rank {dist.get_rank()} is not in the group {dist.get_process_group_ranks(group)}: "
                         f"create the context only on the group's ranks")
    return group


def broadcast_value(value, source_rank, group):
    """`value` as held by group rank `source_rank`, on every rank of `group`, through the host (any backend, GPUs
    shared or not): tensors keep dtype and device, anything else is pickled. Collective over the group."""
    if isinstance(value, torch.Tensor):
        box = [value.detach().cpu() if dist.get_rank(group) == source_rank else None]
        dist.broadcast_object_list(box, group=group, group_src=source_rank)
        return box[0].to(value.device)
    box = [value]
    dist.broadcast_object_list(box, group=group, group_src=source_rank)
    return box[0]
