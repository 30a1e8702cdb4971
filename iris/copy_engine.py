"""Host-driven transfers on the copy engines, signalled to running kernels without an SM.

    ce = ctx.copy_engine()                  # a side stream that starts after the current stream's work so far
    ce.get(dst, a, from_rank=1, flag=flags[3])   # dst <- rank 1's copy of `a`; then flags[3] = 1
    consumer[grid](..., flags, ...)         # runs meanwhile; iris.wait(flags + 3, 1, ...) before reading dst
    ce.join()                               # the current stream waits for the copies

Why: a persistent kernel that holds every SM cannot leave one free for a communication kernel, and if it waits on
that kernel's flags it deadlocks. The copy engines move peer memory without SMs, and cuStreamWriteValue32 raises a
flag from the stream itself, after the copy, so the kernel can keep all SMs and consume each chunk as it lands.
Everything is enqueued on streams, so it runs eagerly and inside CUDA graph capture alike.

Flags hold 0 or 1 (a stream write stores a constant: a captured graph would replay an epoch value unchanged), so the
consumer lowers them again once it is done with them (fused_ops/all_gather/copy_engine.py: its last program does).
On the CPU backend there are no streams: each copy and flag write happens at once, before the kernels launched
after it, which the interpreter's in-order execution needs anyway.
"""

import torch

_DRIVER = None
_STREAMS = {}


def _driver():
    global _DRIVER
    if _DRIVER is None:
        from ._cudart import CudaDriver

        _DRIVER = CudaDriver()
    return _DRIVER


class CopyEngine:
    def __init__(self, ctx):
        self.ctx = ctx
        self.cuda = ctx.backend == "cuda"
        if self.cuda:
            self.main = torch.cuda.current_stream(ctx.device)
            self.stream = _STREAMS.setdefault(ctx.device, torch.cuda.Stream(ctx.device))
            self.stream.wait_stream(self.main)

    def get(self, dst, src, from_rank, flag=None):
        """dst (a contiguous tensor of this rank, anywhere in device memory) <- `from_rank`'s copy of `src` (a
        contiguous tensor on the symmetric heap, same dtype and size); then, if given, the one-element int32
        `flag` <- 1 once the copy has landed."""
        ctx = self.ctx
        if not ctx.is_symmetric(src):
            raise ValueError("CopyEngine.get: src must live on the symmetric heap (peers' copies are reached through it)")
        if not (src.is_contiguous() and dst.is_contiguous()) or src.dtype != dst.dtype or src.numel() != dst.numel():
            raise ValueError(f"CopyEngine.get: src and dst must be contiguous with the same dtype and size, got "
                             f"{src.dtype} {tuple(src.shape)} and {dst.dtype} {tuple(dst.shape)}")
        if not 0 <= from_rank < ctx.num_ranks:
            raise ValueError(f"CopyEngine.get: from_rank={from_rank} is not a rank of this world of {ctx.num_ranks}")
        if flag is not None and (flag.dtype != torch.int32 or flag.numel() != 1):
            raise ValueError(f"CopyEngine.get: flag must be a one-element int32 tensor, got {flag.dtype} "
                             f"{tuple(flag.shape)}")
        heap = ctx.heap
        offset = src.data_ptr() - heap.bases[ctx.cur_rank]
        nbytes = src.numel() * src.element_size()
        if self.cuda:
            heap.rt.memcpy_async(dst.data_ptr(), heap.bases[from_rank] + offset, nbytes, self.stream.cuda_stream)
            if flag is not None:
                _driver().stream_write_value32(self.stream.cuda_stream, flag.data_ptr(), 1)
        else:
            peer = heap.views[from_rank][offset:offset + nbytes].view(src.dtype)
            dst.view(-1).copy_(peer)
            if flag is not None:
                flag.fill_(1)

    def join(self):
        """The current stream waits for every copy and flag write enqueued so far."""
        if self.cuda:
            self.main.wait_stream(self.stream)
