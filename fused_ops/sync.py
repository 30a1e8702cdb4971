"""A fused call's synchronization, done by its kernels themselves instead of by launches around it: the call
counter (was a torch `add_` before the kernel), the entry barrier (was a device_barrier kernel before it: no rank
writes into, or reads from, a peer's memory before that peer has entered the call) and the exit barrier (was one
after it: when this rank's kernel ends, every rank has finished its writes into, and reads from, this rank's memory).
Each of those launches cost a kernel boundary, 1-3 us of a 15-30 us call at small M; here the entry wait falls after
the program's first GEMM tile, where the peers have long arrived, and the exit costs one atomic per program.

The words live in the variant's workspace (Problem.workspace(in_kernel=True): `ws["sync"]`, int32):
    [EPOCH]   calls finished (the call counter the variant's flags and double buffers are keyed by)
    [DONE]    programs of this rank that have finished the current call (back to 0 when the call ends)
    [ENTRIES + r], [EXITS + r]   how many calls rank r has entered / finished its part of (r = 0 .. world-1)

Why repeated calls are safe: every program reads EPOCH at its start and the last program to finish stores the next
value, so all programs of a call agree on its number; the next call's kernel starts only after this one has ended
(stream order; under PDL its griddepcontrol.wait). Entry and exit counts of call e reach e and only grow, so a wait
for ">= e" never sees a stale count. Waits are iris.wait: bounded, and a timeout names rank, program and flag.

A call of two kernels (the bulk-synchronous variants) splits these parts between them: each kernel takes a ROLE
(role() on the host, start()/finish() in the kernel) that says which it does. Its "entry" is then the point from
which peers may access this rank's memory: the call's start (ENTER: program 0 announces it when its kernel starts) or
the first kernel's results being complete (ARRIVE: the last program of that kernel announces it, after its acq_rel
ticket, so every program's stores are released with it). ROLE 0 is the older scheme: the host advances the call
counter before the launches (Problem.workspace(in_kernel=False)) and device barriers order the call.
"""

import triton
import triton.language as tl

import iris

EPOCH = tl.constexpr(0)
DONE = tl.constexpr(1)
ENTRIES = tl.constexpr(2)

# ROLE bits of a kernel in a call of several kernels (see role()).
COUNTED = tl.constexpr(1)
ENTER = tl.constexpr(2)
WAIT = tl.constexpr(4)
ARRIVE = tl.constexpr(8)
EXIT = tl.constexpr(16)
CLOSE = tl.constexpr(32)


def words(world):
    """Size of the sync array for `world` ranks."""
    return 2 + 2 * world


def role(enter=False, wait=False, arrive=False, exit=False, close=False):
    """The ROLE constexpr of one kernel of a several-kernel call whose workspace is Problem.workspace(in_kernel=True).
    enter: program 0 announces this rank's entry when the kernel starts; wait: each program waits for every peer's
    entry before its first access to a peer's memory; arrive: the kernel's last program announces the entry when the
    kernel's stores are complete; exit: the last program holds the exit barrier; close: this is the call's last
    kernel, whose last program stores the call counter. A call announces its entry once (enter or arrive) and
    closes once."""
    bits = [(enter, ENTER), (wait, WAIT), (arrive, ARRIVE), (exit, EXIT), (close, CLOSE)]
    return COUNTED.value | sum(bit.value for on, bit in bits if on)


@triton.jit
def _tell_peers(COUNTS, cur_rank, world_size, heap_bases):
    """COUNTS[cur_rank] += 1 on every peer (a release: what this program has done or acquired is visible first)."""
    for i in range(1, world_size):
        iris.signal(COUNTS + cur_rank, 1, cur_rank, (cur_rank + i) % world_size, heap_bases, op="add")


@triton.jit
def _wait_peers(COUNTS, epoch, cur_rank, world_size, heap_bases):
    """Until COUNTS[r] >= epoch here for every peer r."""
    for i in range(1, world_size):
        iris.wait(COUNTS + (cur_rank + i) % world_size, epoch, cur_rank, heap_bases, cmp="ge")


@triton.jit
def begin(SYNC, cur_rank, world_size, heap_bases, ENTRY: tl.constexpr):
    """This call's number (1, 2, ...). With ENTRY, program 0 tells every peer that this rank has entered the call:
    everything before the kernel on this rank's stream is done."""
    epoch = tl.load(SYNC + EPOCH) + 1
    if ENTRY:
        if tl.program_id(0) == 0:
            _tell_peers(SYNC + ENTRIES, cur_rank, world_size, heap_bases)
    return epoch


@triton.jit
def entered(SYNC, epoch, seen, cur_rank, world_size, heap_bases):
    """Before a program's first access to a peer's memory: unless `seen` (1: it already waited), wait until every
    peer has entered call `epoch`. Returns 1, for the caller to keep as its `seen`."""
    if seen == 0:
        _wait_peers(SYNC + ENTRIES, epoch, cur_rank, world_size, heap_bases)
    return 1


@triton.jit
def end(
    SYNC, epoch,                        # the call's synchronization words, its epoch
    cur_rank, world_size, heap_bases,   # this rank, the ranks, the symmetric heap
    EXIT: tl.constexpr,                 # wait until every peer is done too
    ARRIVE: tl.constexpr = False,       # announce this rank's entry (an earlier kernel of the call)
    CLOSE: tl.constexpr = True,         # store the call counter (the call's last kernel)
):
    """Last statement of every program. The last program of this rank to get here closes the call: with EXIT, it
    first tells every peer that this rank is done and waits until every peer is (its acq_rel ticket has acquired
    what the other programs released, so its release covers their stores too); then it stores the call counter.
    In a call of several kernels, a kernel before the last one does not close (CLOSE=False), and may announce this
    rank's entry instead (ARRIVE: its stores are complete and released)."""
    tl.debug_barrier()  # all of this program's threads are done before its one ticket
    ticket = tl.atomic_add(SYNC + DONE, 1, sem="acq_rel", scope="sys")
    if ticket == tl.num_programs(0) - 1:
        tl.store(SYNC + DONE, 0)
        if ARRIVE:
            _tell_peers(SYNC + ENTRIES, cur_rank, world_size, heap_bases)
        if EXIT:
            _tell_peers(SYNC + ENTRIES + world_size, cur_rank, world_size, heap_bases)
            _wait_peers(SYNC + ENTRIES + world_size, epoch, cur_rank, world_size, heap_bases)
        if CLOSE:
            tl.store(SYNC + EPOCH, epoch)


@triton.jit
def start(SYNC, ROLE: tl.constexpr, cur_rank, world_size, heap_bases):
    """The call's number in a kernel of a several-kernel call (ROLE from role(); 0: counted by the host)."""
    if ROLE == 0:
        epoch = tl.load(SYNC + EPOCH)
    else:
        epoch = begin(SYNC, cur_rank, world_size, heap_bases, (ENTER & ROLE) != 0)
    return epoch


@triton.jit
def finish(SYNC, epoch, ROLE: tl.constexpr, cur_rank, world_size, heap_bases):
    """Last statement of every program of a kernel of a several-kernel call: its ROLE's part of end()."""
    if ((ARRIVE | EXIT | CLOSE) & ROLE) != 0:
        end(SYNC, epoch, cur_rank, world_size, heap_bases, (EXIT & ROLE) != 0, (ARRIVE & ROLE) != 0,
            (CLOSE & ROLE) != 0)
