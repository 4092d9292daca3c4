"""Parts of the hook-latency benchmark (``benchmarks/hook_latency.py``): the scripted Claude
Code session it measures, and the reading of Claude Code's debug log."""
