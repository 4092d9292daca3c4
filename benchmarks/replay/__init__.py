"""Parts of the eviction replay (``benchmarks/eviction_replay.py``): loading trajectories into
prompts (:mod:`~benchmarks.replay.load`), the need detector (:mod:`~benchmarks.replay.needs`),
the eviction policies (:mod:`~benchmarks.replay.policies`, the host agents' in
:mod:`~benchmarks.replay.host_policies`, Veil's proxy in :mod:`~benchmarks.replay.proxy_policy`),
what is replayed (:mod:`~benchmarks.replay.grid`), the harness that replays it
(:mod:`~benchmarks.replay.harness`), the goals read from the rows
(:mod:`~benchmarks.replay.goals`) and the hand check of the needs
(:mod:`~benchmarks.replay.hand_check`). ``load`` also serves the redaction benchmark."""
