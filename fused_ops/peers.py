"""What the PyTorch SymmetricMemory peer baselines share."""

import torch.distributed as dist


def symm_mem_group(ctx):
    """The name of the context's process group, with symmetric memory enabled for it (older torch needs the call;
    later a no-op)."""
    import torch.distributed._symmetric_memory as symm_mem

    group = (ctx.group or dist.group.WORLD).group_name
    if hasattr(symm_mem, "enable_symm_mem_for_group"):
        symm_mem.enable_symm_mem_for_group(group)
    return group
