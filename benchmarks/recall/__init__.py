"""Parts of the recall benchmarks (``benchmarks/recall_latency.py`` and
``benchmarks/recall_profile.py``): the synthetic workload (one scope of facts and episodes, the
query mix) and the stores it is imported into."""
