"""Every environment variable that iris, fused_ops and taxonomy read: name, default, what it does and who it is for.

This table is the source of truth for docs/configuration.md. The settings are read once, when this module is first
imported (at `import iris`), because most of them decide how kernels are compiled or how calls are prepared; set
them before the import. `value(name)` returns what was read; `read(name)` reads the environment again (for the
launcher variables, which a rank launcher sets per process).

Audiences: "users" (a setting you may want), "A/B runs" (switches a mechanism off to measure what it buys),
"diagnosis" (for finding a problem; not for production), "launchers" (set by torchrun / mpirun / iris.spawn, read
to find this process's rank), "benchmarks" (recorded in result files).
"""

import os
import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    name: str
    default: str  # as the environment would spell it; "" = unset
    kind: str  # "bool" (0 = off, anything else = on), "int", "float", "str", "list" (comma-separated)
    audience: str
    where: str  # the module that acts on it
    doc: str


SETTINGS = (
    # --- backend and bootstrap
    Setting(name="IRIS_BACKEND", default="", kind="str", audience="users", where="iris/_backend.py",
            doc="cpu or cuda; unset: cuda when torch sees a GPU, else cpu (the Triton interpreter, one process per "
                "rank)"),
    Setting(name="IRIS_COMPILE_ONLY", default="", kind="str", audience="diagnosis", where="iris/_backend.py",
            doc="1: act as the CUDA backend on a machine without a GPU, to compile kernels (scripts/compile_check.py)"),
    Setting(name="TRITON_INTERPRET", default="", kind="str", audience="users", where="iris/_backend.py",
            doc="Triton's own switch; set (and IRIS_BACKEND unset) it selects the CPU backend; the CPU backend sets "
                "it"),
    Setting(name="IRIS_BOOTSTRAP", default="", kind="str", audience="users", where="iris/distributed.py",
            doc="mpi: start torch.distributed through mpi4py even when no MPI launcher variable is set"),
    Setting(name="IRIS_CPU_CU_COUNT", default="4", kind="int", audience="users", where="iris/host.py",
            doc="what get_cu_count() reports on the CPU backend (persistent grids size themselves by it)"),
    Setting(name="IRIS_RANK_TIMEOUT_S", default="900", kind="float", audience="users", where="iris/launch.py",
            doc="seconds iris.spawn / RankPool wait for a rank's call before failing it and tearing the pool down"),
    Setting(name="IRIS_SESSION", default="", kind="str", audience="launchers", where="iris/host.py",
            doc="CPU backend: the shared-memory name prefix of a rank pool's heaps (RankPool sets it; unset: random)"),
    # --- device-side waits
    Setting(name="IRIS_WAIT_TIMEOUT_S", default="30", kind="float", audience="users", where="iris/device.py",
            doc="bound of every device-side spin-wait; on timeout the GPU records where and the host raises "
            "iris.DeviceWaitTimeout at the next barrier() (the interpreter raises at once)"),
    Setting("IRIS_DEBUG_CHECKS", "0", "bool", "diagnosis", "iris/consistency.py",
            "1: compare every call's arguments across ranks (catalog ops, host collectives, prepared calls included), "
            "not only the first call of each signature; costs a host exchange per call"),
    # --- launch paths: each is on by default; 0 turns a mechanism off to measure it
    Setting(name="IRIS_PDL", default="1", kind="bool", audience="A/B runs", where="iris/device.py",
            doc="programmatic dependent launch for every kernel of the library on GPUs"),
    Setting(name="IRIS_REPLAY", default="1", kind="bool", audience="A/B runs", where="iris/replay.py",
            doc="a repeated eager call replays a CUDA graph of its launches, captured at its second sighting"),
    Setting(name="IRIS_REPLAY_CAPACITY", default="64", kind="int", audience="users", where="iris/replay.py",
            doc="graphs kept per context (least recently used dropped first)"),
    Setting(name="IRIS_PREPARED", default="1", kind="bool", audience="A/B runs", where="iris/replay.py",
            doc="from the third identical call, skip the checks and set-up and only launch (prepared calls)"),
    Setting(name="IRIS_RELAUNCH", default="1", kind="bool", audience="A/B runs", where="iris/relaunch.py",
            doc="a prepared collective call of at least IRIS_RELAUNCH_MIN_BYTES relaunches its kernel instead of a "
                "graph"),
    Setting(name="IRIS_RELAUNCH_MIN_BYTES", default=str(1 << 20), kind="int", audience="A/B runs",
            where="iris/relaunch.py",
            doc="the size from which prepared collective calls relaunch their kernel (below: graph launch)"),
    Setting(name="CUDA_DEVICE_MAX_CONNECTIONS", default="8", kind="str", audience="users", where="iris/copy_engine.py",
            doc="CUDA's; 1 puts every stream on one hardware queue, which CopyEngine.wait refuses (it would deadlock)"),
    # --- the catalog
    Setting(name="FUSED_OPS_HOST_TMA", default="1", kind="bool", audience="A/B runs", where="fused_ops/problem.py",
            doc="TMA descriptors of A and B built on the host (0: in every program, 1.5-2.5 µs more per launch)"),
    Setting(name="FUSED_OPS_EDGE_INSIDE", default="1", kind="bool", audience="A/B runs", where="fused_ops/config.py",
            doc="1: the tile loop loads its last row and column of tiles inside the operands, not past their edge "
                "(the GEMM alone and the catalog's variants but all-gather pull and MoE; 0: past it, and the "
                "GEMM alone's bf16 picks at 129-255 rows as timed before)"),
    Setting(name="FUSED_OPS_PDL_NEXT", default="exit", kind="str", audience="A/B runs", where="fused_ops/gemm.py",
            doc="exit or start: when the catalog's persistent kernels let the next kernel launch"),
    Setting(name="FUSED_OPS_CAPTURE_UNSAFE", default="", kind="list", audience="diagnosis",
            where="fused_ops/registry.py",
            doc="op/variant[,...]: allow CUDA-graph capture of variants that a graph may deadlock (copy_engine, "
            "producer_consumer)"),
    Setting(name="FUSED_OPS_MOE_GROUPED_MM", default="1", kind="bool", audience="A/B runs",
            where="fused_ops/moe/torch_nccl.py",
            doc="the moe_ffn torch_nccl baseline's expert GEMMs through torch._grouped_mm on CUDA bf16 (0: one "
                "matmul per expert)"),
    # --- results
    Setting(name="IRIS_COMMIT", default="", kind="str", audience="benchmarks",
            where="taxonomy/cli.py, benchmarks/, scripts/",
            doc="the commit recorded in result CSVs (unset: git rev-parse --short HEAD)"),
)

# Set by rank launchers and read when a context starts (iris/distributed.py, iris/host.py, taxonomy/cli.py): where
# this process sits among the ranks. Not settings: read(name) reads them when needed.
LAUNCHER_VARIABLES = {
    "RANK": "this process's rank (torchrun, iris.spawn)",
    "WORLD_SIZE": "the number of ranks (torchrun, iris.spawn)",
    "LOCAL_RANK": "the rank on this node: picks the GPU",
    "LOCAL_WORLD_SIZE": "ranks on this node: more ranks than GPUs split each GPU's SMs",
    "MASTER_ADDR": "torch.distributed's rendezvous address",
    "MASTER_PORT": "torch.distributed's rendezvous port",
    "OMPI_COMM_WORLD_SIZE": "Open MPI's mpirun: bootstrap through mpi4py",
    "OMPI_COMM_WORLD_LOCAL_RANK": "Open MPI's local rank",
    "PMI_SIZE": "MPICH's (PMI) mpirun: bootstrap through mpi4py",
    "PMIX_RANK": "PMIx launchers: bootstrap through mpi4py",
    "MPI_LOCALNRANKS": "MPICH's Hydra: bootstrap through mpi4py",
    "SLURM_PROCID_MPI": "Slurm with MPI: bootstrap through mpi4py",
    "IRIS_HOSTNAME": "this rank's host identity for the locality check and iris.node_groups (unset: the hostname); "
                     "iris.spawn(nodes=k) sets it to simulate k hosts on one machine",
    "IRIS_DEVICE": "the GPU index of this rank (unset: LOCAL_RANK modulo the visible GPUs); set by iris.spawn(nodes=k)",
    "GROUP_RANK": "torchrun's node index; iris.spawn(nodes=k) sets it for its simulated nodes",
}

_BY_NAME = {s.name: s for s in SETTINGS}


def parse(setting, raw):
    """The typed value of a setting from its environment string (None or "": the default). Bad values raise."""
    text = setting.default if raw is None or raw.strip() == "" else raw.strip()
    try:
        if setting.kind == "bool":
            return text != "0"
        if setting.kind == "int":
            return int(text)
        if setting.kind == "float":
            return float(text)
        if setting.kind == "list":
            return tuple(filter(None, (t.strip() for t in text.split(","))))
        return text
    except ValueError:
        raise ValueError(f"{setting.name}={raw!r}: expected {setting.kind} ({setting.doc})") from None


def read(name):
    """Read a setting (or a launcher variable, as a string or None) from the environment now."""
    if name in LAUNCHER_VARIABLES:
        return os.environ.get(name)
    return parse(_BY_NAME[name], os.environ.get(name))


_VALUES = {s.name: read(s.name) for s in SETTINGS}


def value(name):
    """A setting's value as read at import."""
    return _VALUES[name]


def table():
    """One row per setting: name, default, kind, audience, where, doc, and the value in effect."""
    return [dict(name=s.name, default=s.default, kind=s.kind, audience=s.audience, where=s.where, doc=s.doc,
                 value=_VALUES[s.name]) for s in SETTINGS]


def ab_prefix():
    """The A/B settings this process runs with changed from their defaults, as a `NAME=value ` command prefix: each
    turns a mechanism on or off, so a benchmark's command alone would not say what ran (its CSVs' `command`)."""
    changed = [s.name for s in SETTINGS if s.audience == "A/B runs" and _VALUES[s.name] != parse(s, None)]
    return "".join(f"{name}={shlex.quote(os.environ[name])} " for name in changed)
