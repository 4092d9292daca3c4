"""Access-log summaries: parsing, percentiles, per-endpoint reports."""

from logstats.parse import Hit, parse_file, parse_line
from logstats.report import Endpoint, summarise
from logstats.stats import percentile

__all__ = ["Endpoint", "Hit", "parse_file", "parse_line", "percentile", "summarise"]
