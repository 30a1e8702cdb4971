"""Process-group bootstrap: reuse an existing torch.distributed group, or start one under torchrun / iris.spawn
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment), under mpirun (mpi4py), or as a single rank."""

import os
import socket

import torch
import torch.distributed as dist

_MPI_ENV = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "SLURM_PROCID_MPI")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _under_mpi():
    return os.environ.get("IRIS_BOOTSTRAP") == "mpi" or any(k in os.environ for k in _MPI_ENV)


def _mpi_rendezvous():
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise RuntimeError("running under an MPI launcher, but mpi4py is not installed: "
                           "pip install 'iris-triton[mpi]'") from err
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
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
    backend = "cpu:gloo,cuda:nccl" if use_cuda else "gloo"
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world)
    return rank, world, local_rank


def all_gather_object(obj):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


# torch 2.13 renamed all_gather_into_tensor (same arguments); the GPU machine's torch 2.11 has only the old name.
all_gather_single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
