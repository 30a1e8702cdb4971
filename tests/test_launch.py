"""Rank processes: errors reported with their rank, no hang, no /dev/shm segment left; every bootstrap path."""

import glob
import os
import shutil
import signal
import subprocess
import sys

import pytest

import iris
from conftest import gpu_per_rank

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def shm_segments():
    return sorted(glob.glob("/dev/shm/iris-*"))


def r_identity(ctx, x):
    return (ctx.get_rank(), x)


def r_raise_on_1(ctx):
    if ctx.get_rank() == 1:
        raise ValueError("boom from rank one")
    return "fine"


def r_die_on_1(ctx):
    if ctx.get_rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    ctx.barrier()  # rank 0 would wait here forever without the pool's failure handling
    return "unreachable"


def test_spawn_returns_results_by_rank():
    before = shm_segments()
    assert iris.spawn(r_identity, 3, "x", heap_size=1 << 20) == [(0, "x"), (1, "x"), (2, "x")]
    assert shm_segments() == before


def test_rank_exception_is_reported_and_pool_survives():
    before = shm_segments()
    with iris.RankPool(2, heap_size=1 << 20) as pool:
        with pytest.raises(iris.RankError) as info:
            pool.run(r_raise_on_1)
        assert info.value.rank == 1 and "boom from rank one" in str(info.value) and "rank 1" in str(info.value)
        assert pool.run(r_identity, 5) == [(0, 5), (1, 5)]  # host-side errors leave the pool usable
    assert shm_segments() == before


def test_killed_rank_does_not_hang_and_leaves_no_segment():
    before = shm_segments()
    pool = iris.RankPool(2, heap_size=1 << 20, env={"IRIS_WAIT_TIMEOUT_S": "2"})
    with pytest.raises(iris.RankError) as info:
        pool.run(r_die_on_1, timeout=60)
    assert info.value.rank in (0, 1) and "exited with code -9" in str(info.value)
    assert pool.broken and not pool.procs
    with pytest.raises(RuntimeError, match="closed"):
        pool.run(r_identity, 1)
    assert shm_segments() == before


def r_bad_startup(ctx):
    return "never"


def test_startup_failure_is_reported():
    with pytest.raises(ValueError, match="positive number of bytes"):
        iris.RankPool(2, heap_size=-5)
    with pytest.raises(ValueError, match="world_size"):
        iris.RankPool(0)


def r_preinitialized(ctx):
    """Bootstrap (a): torch.distributed initialized by the user before iris.iris()."""
    import torch.distributed as dist

    assert ctx is None and not dist.is_initialized()
    dist.init_process_group("gloo", init_method="env://")
    c = iris.iris(1 << 20)
    x = c.full((4,), float(c.get_rank()))
    c.barrier()
    out = (c.get_rank(), c.get_num_ranks(), x.sum().item())
    c.close()
    dist.destroy_process_group()
    return out


def test_bootstrap_with_initialized_process_group():
    assert iris.spawn(r_preinitialized, 2, heap_size=None) == [(0, 2, 0.0), (1, 2, 4.0)]


def _run(cmd, timeout=240):
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_bootstrap_under_torchrun():
    out = _run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "examples/demo.py"])
    assert out.count("(OK)") == 2 * 2  # two lines per rank: the exchange, then the operator and the all-reduce


def _mpiexec():
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    mpiexec = mpiexec if os.path.exists(mpiexec) else shutil.which("mpiexec")
    assert mpiexec, "the test extra installs mpi4py and mpich (which provides mpiexec)"
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")  # Open MPI (the GPU machine's) refuses root otherwise
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return mpiexec


def test_bootstrap_under_mpirun():
    out = _run([_mpiexec(), "-n", "2", sys.executable, "examples/demo.py"])
    assert out.count("(OK)") == 2 * 2


# Each MPI rank takes a host identity from its rank (MPICH's PMI_RANK or Open MPI's), 2 ranks per simulated node.
_TWO_NODES = ("import os, runpy; r = int(os.environ.get('PMI_RANK') or os.environ['OMPI_COMM_WORLD_RANK']); "
              "os.environ['IRIS_HOSTNAME'] = f'node{r // 2}'; "
              "runpy.run_path('examples/tp_dp_2d.py', run_name='__main__')")


@gpu_per_rank(4)  # NCCL across the simulated nodes: one GPU per rank
def test_two_nodes_under_mpirun():
    """The 2-D example (TP inside a node, DP across nodes through the hierarchical all-reduce) as mpirun starts it."""
    out = _run([_mpiexec(), "-n", "4", sys.executable, "-c", _TWO_NODES])
    assert "2 node(s) x 2 ranks: TP 2 x DP 2" in out, out


def test_demo():
    before = shm_segments()
    assert _run([sys.executable, "examples/demo.py", "--ranks", "4"]).count("(OK)") == 4 * 2
    assert shm_segments() == before


@gpu_per_rank(2)  # the reference's launch: NCCL, one GPU per rank
def test_seed_quickstart():
    before = shm_segments()
    assert "4096 ones from rank 0: OK" in _run([sys.executable, "examples/quickstart.py"])
    assert shm_segments() == before
