"""taxonomy: list, run, sweep and plot the fused-op catalog (python -m taxonomy --help)."""
