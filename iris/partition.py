"""Partitioned tensors: a global tensor split along one dimension across ranks (or a device group's devices), each
shard on the symmetric heap, plus what a kernel needs to find the owner and local offset of any global index.

    x = iris.partitioned(ctx, (4096, 1024), dim=0)    # collective; x.local is this rank's 2048 x 1024 shard
    x.owner(3000), x.local_index(3000)                # (1, 952) on the host
    # in a kernel: pointers to global rows, wherever they live
    ptrs = iris.partition.global_ptr(x_local_ptr, rows, x.shard_size, x.stride, cur_rank, heap_bases) + cols

Every shard has the same (ceil-divided) size, so it sits at the same heap offset on every rank; when the dimension
does not divide evenly, the last rank's shard is padded and `x.local` is its valid part.
"""

import torch
import triton
import triton.language as tl


class Symmetric:
    """One tensor per device of a DeviceGroup, all at the same heap offset."""

    def __init__(self, shards):
        self.shards = list(shards)

    def __getitem__(self, device):
        return self.shards[device]

    def __len__(self):
        return len(self.shards)


class Partitioned:
    """Shards of a global tensor along `dim`: `shards` by rank (device group) or `local` (this rank's, one process
    per rank). `shard_size` rows of the dimension per rank; `stride` the element stride of that dimension."""

    def __init__(self, global_shape, dim, world, shards, rank=None, ctx=None):
        self.global_shape, self.dim, self.world, self.rank = torch.Size(global_shape), dim, world, rank
        self.ctx = ctx
        self.shard_size = -(-self.global_shape[dim] // world)
        self.padded = list(shards)
        self.stride = self.padded[0].stride(dim)
        self.shards = [s.narrow(dim, 0, self.valid(r)) for r, s in
                       (enumerate(self.padded) if rank is None else [(rank, self.padded[0])])]

    @classmethod
    def allocate(cls, alloc, global_shape, dim, world, rank=None, zero=True, ctx=None):
        global_shape = torch.Size(global_shape)
        if not -len(global_shape) <= dim < len(global_shape):
            raise ValueError(f"dim={dim} is out of range for a {len(global_shape)}-D shape {tuple(global_shape)}")
        dim %= len(global_shape)
        if global_shape[dim] < world:
            raise ValueError(f"cannot split dimension {dim} of size {global_shape[dim]} over {world} ranks")
        shape = list(global_shape)
        shape[dim] = -(-global_shape[dim] // world)
        shards = alloc(tuple(shape))
        shards = shards if isinstance(shards, list) else [shards]
        if zero:
            for s in shards:
                s.zero_()
        return cls(global_shape, dim, world, shards, rank, ctx)

    # ------------------------------------------------------------------------------------------ index maths
    def valid(self, rank):
        """Valid length of `rank`'s shard along dim (the last may be shorter)."""
        return max(0, min(self.shard_size, self.global_shape[self.dim] - rank * self.shard_size))

    def owner(self, index):
        if not 0 <= index < self.global_shape[self.dim]:
            raise IndexError(f"index {index} is out of range for dimension {self.dim} of size "
                             f"{self.global_shape[self.dim]}")
        return index // self.shard_size

    def local_index(self, index):
        return index - self.owner(index) * self.shard_size

    def bounds(self, rank):
        """[start, stop) of the global indices `rank` owns."""
        start = rank * self.shard_size
        return start, start + self.valid(rank)

    @property
    def local(self):
        """This rank's shard (one process per rank)."""
        if self.rank is None:
            raise AttributeError("a device group's tensor has one shard per device: use .shards[device]")
        return self.shards[0]

    # ------------------------------------------------------------------------------------------ host copies
    def copy_from(self, full):
        """Fill the shard(s) from the global tensor (the same on every rank)."""
        if tuple(full.shape) != tuple(self.global_shape):
            raise ValueError(f"expected a tensor of the global shape {tuple(self.global_shape)}, got "
                             f"{tuple(full.shape)}")
        ranks = range(self.world) if self.rank is None else [self.rank]
        for shard, r in zip(self.shards, ranks):
            start, stop = self.bounds(r)
            shard.copy_(full.narrow(self.dim, start, stop - start))
        return self

    def full(self):
        """The global tensor (device group: concatenated on the first device; one process per rank: every rank
        reads every shard through the heap, after a barrier; collective)."""
        if self.rank is None:
            return torch.cat([s.to(self.shards[0].device) for s in self.shards], self.dim)
        ctx, shard = self.ctx, self.padded[0]
        out = torch.empty(self.global_shape, dtype=shard.dtype, device=shard.device)
        inner = int(torch.Size(self.global_shape[self.dim + 1:]).numel())
        ctx.barrier()  # every shard is written
        block = 1024
        _gather_kernel[(triton.cdiv(out.numel(), block),)](shard, out, out.numel(), self.global_shape[self.dim],
                                                          self.shard_size, inner, ctx.get_rank(),
                                                          ctx.get_heap_bases(), BLOCK=block)
        ctx.barrier()  # nobody changes a shard while a peer still reads it
        return out


def partitioned(ctx, global_shape, dim=0, dtype=None):
    """Collective: a tensor of `global_shape` split along `dim` over the ranks; this rank's shard on the heap."""
    return Partitioned.allocate(lambda shape: ctx.zeros(*shape, dtype=dtype), global_shape, dim,
                                ctx.get_num_ranks(), ctx.get_rank(), ctx=ctx)


# ---------------------------------------------------------------------------------------------- device side
@triton.jit
def owner_of(index, shard_size):
    """Rank owning each global index along the partitioned dimension, and the index inside its shard."""
    owner = index // shard_size
    return owner, index - owner * shard_size


@triton.jit
def global_ptr(local_ptr, index, shard_size, stride, cur_rank, heap_bases):
    """Pointers to global indices `index` (a block) along the partitioned dimension, each translated to the rank
    that owns it: local_ptr is this rank's shard base (offset within the other dimensions already added)."""
    owner, local = owner_of(index, shard_size)
    elem: tl.constexpr = (local_ptr.dtype.element_ty.primitive_bitwidth + 7) // 8
    delta = (tl.load(heap_bases + owner) - tl.load(heap_bases + cur_rank)) // elem
    return local_ptr + delta + local * stride


@triton.jit
def _gather_kernel(SHARD, OUT, numel, size, shard_size, inner, cur_rank, heap_bases, BLOCK: tl.constexpr):
    """OUT (the global tensor, flat) <- every element read from the shard that owns it."""
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < numel
    o = idx // (size * inner)
    i = (idx // inner) % size  # always a valid index, so masked lanes still name a real owner
    src = global_ptr(SHARD + o * shard_size * inner + idx % inner, i, shard_size, inner, cur_rank, heap_bases)
    tl.store(OUT + idx, tl.load(src, mask=mask), mask=mask)
