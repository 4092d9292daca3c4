"""Parts of the eviction replay (``benchmarks/eviction_replay.py``): loading trajectories into
prompts, the need detector, and the eviction policies."""
