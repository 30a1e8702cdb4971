"""Rank pools shared by the whole session: torch/triton are imported and the heap is mapped once per world size.

Each test body runs on every rank as `fn(ctx, *args)` inside `ctx.scratch()`, so its heap allocations are released
afterwards. Rank functions live at module level in the test files (the rank processes import them by name)."""

import os
import sys

import pytest

import iris

sys.path.insert(0, os.path.dirname(__file__))

HEAP = 64 << 20
_pools = {}


def _scoped(ctx, fn, args):
    """fn(ctx, *args) inside ctx.scratch(), and whether the context is broken (iris/health.py). A broken context
    fails scratch()'s closing barrier, which drops the pool; the flag makes sure of it for any other way out."""
    with ctx.scratch():
        result = fn(ctx, *args)
    return result, ctx._broken is not None


class Ranks:
    def __init__(self, world):
        self.world = world

    @property
    def pool(self):
        pool = _pools.get(self.world)
        if pool is None or pool.broken or not pool.procs:
            pool = _pools[self.world] = iris.RankPool(self.world, heap_size=HEAP)
        return pool

    def run(self, fn, *args, timeout=600):
        """fn(ctx, *args) on every rank; results by rank. After a failure the pool is dropped: its ranks may be out
        of step (heap offsets, epochs), and one failing test must not fail the next ones."""
        pool = self.pool
        try:
            replies = pool.run(_scoped, fn, args, timeout=timeout)
        except iris.RankError:
            pool.close()
            raise
        if any(broken for _, broken in replies):  # a broken context must never reach the next test
            pool.close()
        return [result for result, _ in replies]


@pytest.fixture(params=[2, 4], ids=lambda w: f"{w}ranks", scope="session")
def ranks(request):
    return Ranks(request.param)


@pytest.fixture(scope="session")
def ranks2():
    return Ranks(2)


@pytest.fixture(scope="session")
def ranks4():
    return Ranks(4)


def pytest_sessionfinish(session, exitstatus):
    for pool in _pools.values():
        pool.close()


ON_GPU = iris.BACKEND == "cuda"


def gpu_per_rank(world):
    """Mark for tests whose reference or variant goes through NCCL: on a GPU machine with fewer GPUs than ranks
    (ranks then share a GPU, which NCCL refuses) they are skipped, and reported as skipped."""
    if ON_GPU:
        import torch
        few = torch.cuda.device_count() < world
    else:
        few = False
    return pytest.mark.skipif(few, reason=f"NCCL needs one GPU per rank: {world} ranks, fewer GPUs here")


# bf16 is broken in the Triton interpreter (wrong tl.dot, no bf16 constants): GPU only.
FLOAT_DTYPES = ["float16", "float32"] + (["bfloat16"] if ON_GPU else [])
