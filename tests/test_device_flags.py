"""Producer/consumer message passing with flags, device and host barriers, bounded waits."""

import re

import pytest
import torch
import triton
import triton.language as tl

import iris

PROGRAMS, CHUNK = 3, 32


@triton.jit
def ring_kernel(data, inbox, received, ready, acks, epoch, cur, world, heap_bases, CHUNK: tl.constexpr):
    """Each program sends its chunk to the next rank and receives one from the previous rank. Credits (acks) keep a
    sender from overwriting an inbox the receiver has not read, so calls need no host barrier between them; flags
    carry the call's epoch, so a flag left from an earlier call can never satisfy a later wait."""
    pid = tl.program_id(0)
    nxt = (cur + 1) % world
    prv = (cur + world - 1) % world
    offs = pid * CHUNK + tl.arange(0, CHUNK)
    iris.wait(acks + pid, epoch - 1, cur, heap_bases, cmp="ge")  # receiver has consumed call epoch-1
    iris.put(data + offs, inbox + offs, cur, nxt, heap_bases)
    iris.signal(ready + pid, epoch, cur, nxt, heap_bases)
    iris.wait(ready + pid, epoch, cur, heap_bases, cmp="eq")
    tl.store(received + offs, tl.load(inbox + offs))
    iris.signal(acks + pid, epoch, cur, prv, heap_bases)  # give the credit back to the sender


def chunk_data(rank, call, dtype):
    g = torch.Generator().manual_seed(1000 * call + rank)
    return torch.randn(PROGRAMS * CHUNK, generator=g, dtype=torch.float64).to(dtype)


def r_ring(ctx, calls, dtype_name):
    dtype, world, rank = getattr(torch, dtype_name), ctx.num_ranks, ctx.cur_rank
    data = ctx.zeros(PROGRAMS * CHUNK, dtype=dtype)
    inbox = ctx.zeros(PROGRAMS * CHUNK, dtype=dtype)
    received = ctx.zeros(PROGRAMS * CHUNK, dtype=dtype)
    ready = ctx.zeros(PROGRAMS, dtype=torch.int32)
    acks = ctx.zeros(PROGRAMS, dtype=torch.int32)
    ctx.barrier()
    bad = []
    for call in range(1, calls + 1):
        data.copy_(chunk_data(rank, call, dtype))
        received.fill_(float("nan") if dtype.is_floating_point else -1)
        ring_kernel[(PROGRAMS,)](data, inbox, received, ready, acks, call, rank, world, ctx.get_heap_bases(),
                                 CHUNK=CHUNK)
        if not torch.equal(received.cpu(), chunk_data((rank - 1) % world, call, dtype)):
            bad.append(call)
    ctx.barrier()
    return bad


@pytest.mark.parametrize("dtype", ["float16", "float32", "int32"])
def test_message_passing_repeated(ranks, dtype):
    assert ranks.run(r_ring, 8, dtype) == [[]] * ranks.world


@triton.jit
def write_slot_kernel(slots, value, cur, world, heap_bases):
    for peer in range(world):
        iris.store(slots + cur, value, cur, peer, heap_bases)


def r_barriers(ctx, rounds):
    world, rank = ctx.num_ranks, ctx.cur_rank
    slots = ctx.full((world,), -1, dtype=torch.int32)
    ctx.barrier()
    for it in range(rounds):
        write_slot_kernel[(1,)](slots, it, rank, world, ctx.get_heap_bases())
        if it % 2:
            ctx.device_barrier()
        else:
            ctx.barrier()
        if slots.cpu().tolist() != [it] * world:
            return f"round {it}: {slots.cpu().tolist()}"
        ctx.device_barrier()  # nobody overwrites a slot before everyone has read it
    ctx.barrier()
    return "ok"


def test_barriers(ranks):
    assert ranks.run(r_barriers, 12) == ["ok"] * ranks.world


@triton.jit
def never_signalled_kernel(flag, cur, heap_bases):
    iris.wait(flag, 1, cur, heap_bases, cmp="eq")


def r_wait_forever(ctx):
    flag = ctx.zeros(4, dtype=torch.int32)
    if ctx.cur_rank == 0:
        never_signalled_kernel[(2,)](flag[3:], ctx.cur_rank, ctx.get_heap_bases())
        ctx.check_device_errors()  # on the GPU the kernel records the timeout and the host raises here
    return "returned"


def test_wait_is_bounded_and_names_rank_program_flag():
    with iris.RankPool(2, heap_size=1 << 20, env={"IRIS_WAIT_TIMEOUT_S": "1.5"}) as pool:
        with pytest.raises(iris.RankError) as info:
            pool.run(r_wait_forever, timeout=120)
        msg = str(info.value)
        assert info.value.rank == 0
        # On the GPU both programs wait at once and either may time out first; the interpreter runs program 0 first.
        assert re.search(r"rank 0, program [01]: wait", msg), msg
        assert "timed out after 1.5 s" in msg and "last seen 0" in msg
        flag_offset = 256 * 3 + 12  # error record, barrier flags, epoch, then flag[3]
        assert f"heap offset {flag_offset}" in msg, msg


def r_decode_record(ctx):
    rec = ctx._errors
    rec.copy_(torch.tensor([1, ctx.cur_rank, 7, 4096, 3, 2, 1, 0], dtype=torch.int64))
    try:
        ctx.check_device_errors()
    except iris.DeviceWaitTimeout as err:
        cleared = int(rec[0].item()) == 0
        return str(err), cleared
    return None, False


def test_host_decodes_device_error_record(ranks2):
    for rank, (msg, cleared) in enumerate(ranks2.run(r_decode_record)):
        assert msg.startswith(f"rank {rank}, program 7: wait on the flag at heap offset 4096 for a value >= 3")
        assert "last seen 2" in msg and cleared
