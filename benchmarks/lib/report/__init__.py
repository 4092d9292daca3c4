"""``docs/benchmarks.md``, rendered from the JSON results alone, and every table the benchmarks
print.

:mod:`~benchmarks.lib.report.document` puts the document together (``render``, ``write``);
each benchmark's section is rendered by the module of this package named after it (``section``
for the document; the tables a benchmark prints at the end of its run come from the same module,
so the terminal and the document never disagree). The "reading" paragraphs are
generated from the numbers, so re-rendering never leaves prose that contradicts the tables.

The full result (``benchmarks/results/NAME.json``) is used when it exists; the quick one
(``NAME-quick.json``) only when the full one is missing, and then it is labelled as quick. A
benchmark with neither is listed as not run.

Nothing here imports ``veil``, numpy or any other third-party package (matplotlib only inside
the plotting functions, when a full run draws), so the report renders even when the package is
broken or mid-edit (``tests/test_benchmarks_quick.py`` checks it).
"""
