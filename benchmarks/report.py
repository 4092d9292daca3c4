"""Render ``docs/benchmarks.md`` from the JSON results, without measuring anything.

Run from the repository root::

    python -m benchmarks.report            # rewrite docs/benchmarks.md
    python -m benchmarks.report --stdout   # print it instead

Each benchmark's full result (``benchmarks/results/NAME.json``) is used when it exists; the
quick one (``NAME-quick.json``) only when the full one is missing, and then it is labelled as
quick. A benchmark with neither is listed as not run. The rendering is
:mod:`benchmarks.lib.report`'s, which imports no ``veil`` and no third-party package, so the
report renders even when the package is broken or mid-edit.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.lib.paths import shown
from benchmarks.lib.report import document


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render docs/benchmarks.md from the results.")
    parser.add_argument("--stdout", action="store_true", help="print instead of writing")
    args = parser.parse_args(argv)
    if args.stdout:
        sys.stdout.write(document.render())
        return 0
    print(f"wrote {shown(document.write())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
