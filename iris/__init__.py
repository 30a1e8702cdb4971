"""iris: multi-GPU programming in Triton on NVIDIA GPUs (CUDA IPC over NVLink), and on the CPU through the Triton
interpreter with one process per rank. Import iris before defining kernels: on the CPU backend it switches the
interpreter on."""

from ._backend import BACKEND  # noqa: F401  (must run before any kernel is defined)
from .device import (  # noqa: F401
    DeviceWaitTimeout,
    atomic_add,
    atomic_and,
    atomic_cas,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_sub,
    atomic_xchg,
    atomic_xor,
    copy,
    fence,
    fence_proxy_async,
    get,
    launched_early,
    load,
    now_ns,
    pdl_launch,
    put,
    signal,
    sm_id,
    store,
    translate,
    wait,
    wait_either,
)
from .copy_engine import CopyEngine  # noqa: F401
from .heap import HeapExhausted  # noqa: F401
from .host import DeviceMismatchError, Iris, context, iris  # noqa: F401
from .health import ConsistencyError, ContextBroken  # noqa: F401
from .device import PeerFailed  # noqa: F401
from .launch import RankError, RankPool, spawn  # noqa: F401
from . import collectives, partition, tracing  # noqa: F401,E402
from . import hierarchical  # noqa: F401
from .hierarchical import MultiNodeContext, multi_node, node_groups  # noqa: F401
from .grid import DEVICE_CONTEXT, DEVICE_ID, HEAP_BASES, NUM_DEVICES, DeviceGroup, Grid, jit  # noqa: F401,E402
from .partition import Partitioned, Symmetric, partitioned  # noqa: F401,E402
from .tracing import Tracer  # noqa: F401,E402
from .device_context import DeviceContext  # noqa: F401
from . import settings, tile  # noqa: F401

TritonContext = DeviceContext  # the reference's newer name

__all__ = [
    # device
    "atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or", "atomic_sub", "atomic_xchg",
    "atomic_xor", "copy", "fence", "fence_proxy_async", "get", "launched_early", "load", "now_ns", "pdl_launch",
    "put", "signal", "sm_id", "store", "translate", "wait", "wait_either",
    # host and launch
    "iris", "Iris", "context", "CopyEngine", "RankPool", "RankError", "spawn",
    # process groups and nodes
    "node_groups", "multi_node", "MultiNodeContext",
    # errors
    "HeapExhausted", "DeviceWaitTimeout", "DeviceMismatchError", "ConsistencyError", "ContextBroken", "PeerFailed",
    # device context and grid
    "DeviceContext", "TritonContext", "DEVICE_CONTEXT", "DeviceGroup", "Grid", "jit", "DEVICE_ID", "HEAP_BASES",
    "NUM_DEVICES", "Partitioned", "Symmetric", "partitioned", "Tracer",
    # modules
    "BACKEND", "collectives", "hierarchical", "partition", "settings", "tile", "tracing",
]

__version__ = "0.1.0"
