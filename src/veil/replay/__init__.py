"""The eviction replay's core, one implementation for ``benchmarks/replay`` and ``veil replay``:
trajectories (:mod:`~veil.replay.trajectory`), the need detector (:mod:`~veil.replay.needs`),
policies and the bill (:mod:`~veil.replay.policies`, :mod:`~veil.replay.host_rules`), Veil
through its proxy (:mod:`~veil.replay.proxy`); the agents' own session files
(:mod:`~veil.replay.transcripts`, :mod:`~veil.replay.claude_code`, :mod:`~veil.replay.codex`,
:mod:`~veil.replay.calls`) and a session replayed three ways (:mod:`~veil.replay.compare`)."""
