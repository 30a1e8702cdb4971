"""Push: one kernel. Producer programs [0, comm_sms) copy this rank's A shard, BLOCK_M rows at a time (split along K
into parts when there are fewer row chunks than producers), into every rank's inbox (the gathered A) and count each
part on a per-chunk flag on every rank; GEMM programs [comm_sms, +gemm_sms) wait for the chunks their tile's rows
need and multiply from the local inbox (through TMA where the layout allows: a proxy fence after each wait).
Producers are the lower-numbered programs, so the interpreter's serial order is safe too. A producer's first store
into a peer's inbox waits for that peer's entry into the call: nobody is still reading the inbox from the previous
call (fused_ops/sync.py; the kernel counts the calls too)."""

import torch
import triton
import triton.language as tl

import iris
from .. import sync
from ..gemm import EDGE_INSIDE, NEXT_IN_AT_START, c_tile, gemm_tile, operands, tile_coords, tile_origins
from ..fp8 import WITH_FP8
from ..registry import register
from .bulk_sync import copy_k, k_parts


@triton.jit
def kernel(
    A, B,                                         # operands: A M x K, B K x N (pointers or descriptors)
    M, N, K,                                      # problem size
    stride_am, stride_ak, stride_bk, stride_bn,   # A's and B's strides, in elements
    C, stride_cm, stride_cn,                      # output: C M x N
    G, stride_gm,                                 # gathered A (world*M_LOCAL x K, heap)
    flags, SYNC,                                  # per-chunk arrival counts; call synchronization (sync.py)
    M_LOCAL, KPARTS,                              # rows per shard; each chunk's K split into KPARTS jobs
    cur_rank, world_size, heap_bases,             # this rank, the ranks, the symmetric heap
    COMM_SMS: tl.constexpr,                       # programs [0, COMM_SMS) push, the rest run the GEMM
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # tiles, grouped order
    COPY_K: tl.constexpr,                         # columns per copy
    TMA: tl.constexpr,                            # 0: plain pointers; 1: TMA; 2: TMA, B stored transposed
    PDL: tl.constexpr = tl.constexpr(False),      # programmatic dependent launch (iris.launched_early)
    SA=None, SB=None, SCALES: tl.constexpr = tl.constexpr(0),  # FP8: scales (gemm.scale_tile); 0: none
    INSIDE: tl.constexpr = EDGE_INSIDE,           # edge tiles' boxes moved inside (gemm.tile_origin)
):
    iris.launched_early(PDL, NEXT_IN_AT_START)
    pid = tl.program_id(0)
    chunks = tl.cdiv(M_LOCAL, BLOCK_M)
    epoch = sync.begin(SYNC, cur_rank, world_size, heap_bases, ENTRY=True)
    if pid < COMM_SMS:
        seen = 0
        span = tl.cdiv(tl.cdiv(K, KPARTS), COPY_K) * COPY_K
        for job in range(pid, chunks * KPARTS, COMM_SMS):
            c = job // KPARTS
            rm = c * BLOCK_M + tl.arange(0, BLOCK_M)
            k_lo = (job % KPARTS) * span
            for k0 in range(k_lo, tl.minimum(k_lo + span, K), COPY_K):
                rk = k0 + tl.arange(0, COPY_K)
                mask = (rm[:, None] < M_LOCAL) & (rk[None, :] < K)
                v = tl.load(A + rm[:, None] * stride_am + rk[None, :] * stride_ak, mask=mask)
                dst = G + (cur_rank * M_LOCAL + rm)[:, None] * stride_gm + rk[None, :]
                tl.store(dst, v, mask=mask)  # this rank's inbox first, then the peers' once they have entered
                seen = sync.entered(SYNC, epoch, seen, cur_rank, world_size, heap_bases)
                for i in range(1, world_size):
                    iris.store(dst, v, cur_rank, (cur_rank + i) % world_size, heap_bases, mask=mask)
            for i in range(world_size):  # one of the chunk's KPARTS parts has landed
                iris.signal(flags + cur_rank * chunks + c, 1, cur_rank, (cur_rank + i) % world_size, heap_bases,
                            op="add")
    else:
        g_op, b_op = operands(G, B, M, N, K, stride_gm, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, TMA)
        num_pid_m, num_pid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
        first = (cur_rank * M_LOCAL) // BLOCK_M
        for tile in range(pid - COMM_SMS, num_pid_m * num_pid_n, tl.num_programs(0) - COMM_SMS):
            pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
            pid_m = (pid_m + first) % num_pid_m  # own rows first: their chunks are ready soonest
            lo, _ = tile_origins(pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, INSIDE)  # the first row its boxes read
            hi = tl.minimum(lo + BLOCK_M, M) - 1
            for f in range((lo // M_LOCAL) * chunks + (lo % M_LOCAL) // BLOCK_M,
                           (hi // M_LOCAL) * chunks + (hi % M_LOCAL) // BLOCK_M + 1):
                iris.wait(flags + f, epoch * KPARTS, cur_rank, heap_bases, cmp="ge")
            if TMA:  # the rows arrived as plain stores; TMA reads through the async proxy
                iris.fence_proxy_async()
            acc = gemm_tile(g_op, b_op, pid_m, pid_n, M, N, K, stride_gm, 1, stride_bk, stride_bn, BLOCK_M,
                            BLOCK_N, BLOCK_K, TMA, SA=SA, SB=SB, SCALES=SCALES, INSIDE=INSIDE)
            ptrs, mask = c_tile(C, pid_m, pid_n, M, N, stride_cm, stride_cn, 0, BLOCK_M, BLOCK_N, INSIDE=INSIDE)
            tl.store(ptrs, acc.to(C.dtype.element_ty), mask=mask)
    sync.end(SYNC, epoch, cur_rank, world_size, heap_bases, EXIT=False)


@register("all_gather_gemm", "push", "workgroup-specialized", "producer programs push A chunks into every rank's "
                                                              "inbox and release flags; GEMM programs wait on them",
          dtypes=WITH_FP8)
def run(p):
    g, c = p.gathered_buffer(), p.c
    chunks, step = -(-p.m_local // p.cfg.block_m), copy_k(p.a.element_size())
    kparts = k_parts(chunks, p.cfg.comm_sms, p.k, step)
    # Flags count parts: after call e each reads e * kparts. The buffer's name carries kparts, so a call with another
    # split (another comm_sms) counts in a workspace, and an epoch, of its own.
    ws = p.workspace(in_kernel=True, **{f"chunk_flags_x{kparts}": ((p.world * chunks,), torch.int32)})
    flags = ws[f"chunk_flags_x{kparts}"]
    gemm_sms = p.gemm_programs(p.cfg.gemm_sms)
    tma = p.tma if (g.stride(0) * g.element_size()) % 16 == 0 else 0
    b = p.operands(b=p.b)[0] if tma else p.b  # G is a pointer too (the producers store into it): built in the kernel
    kernel[(p.cfg.comm_sms + gemm_sms,)](p.a, b, p.m, p.n, p.k, p.a.stride(0), p.a.stride(1), p.b.stride(0),
                                         p.b.stride(1), c, c.stride(0), c.stride(1), g, g.stride(0),
                                         flags, ws["sync"], p.m_local, kparts, *p.rank_args(),
                                         COMM_SMS=p.cfg.comm_sms, BLOCK_M=p.cfg.block_m, BLOCK_N=p.cfg.block_n,
                                         BLOCK_K=p.cfg.block_k, GROUP_M=p.cfg.group_m, COPY_K=step,
                                         TMA=tma,
                                         num_warps=p.cfg.num_warps, num_stages=p.cfg.num_stages,
                                         **iris.pdl_launch(), **p.scale_args())
