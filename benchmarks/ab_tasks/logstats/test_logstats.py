import unittest
from pathlib import Path

from logstats import parse_file, parse_line, percentile, summarise
from logstats.report import busiest_clients, render, status_classes
from logstats.stats import histogram

LOG = Path(__file__).parent / "data" / "access.log"
LINE = (
    '203.0.113.9 - - [12/Mar/2024:10:15:32 +0000] "GET /api/orders/1234?expand=items HTTP/1.1" '
    '200 5120 "-" "curl/8.4.0" 87'
)


class ParseTest(unittest.TestCase):
    def test_line(self):
        hit = parse_line(LINE)
        self.assertEqual(hit.client, "203.0.113.9")
        self.assertEqual(
            (hit.method, hit.path, hit.query), ("GET", "/api/orders/1234", "expand=items")
        )
        self.assertEqual((hit.status, hit.size, hit.ms), (200, 5120, 87))
        self.assertEqual(hit.endpoint, "/api/orders/{id}")
        self.assertEqual(hit.time.hour, 10)

    def test_file(self):
        errors = []
        hits = parse_file(LOG, errors)
        self.assertEqual(len(hits), 240)
        self.assertEqual(len(errors), 2)


class PercentileTest(unittest.TestCase):
    def test_nearest_rank(self):
        values = [15, 20, 35, 40, 50]
        self.assertEqual(percentile(values, 0), 15)
        self.assertEqual(percentile(values, 5), 15)
        self.assertEqual(percentile(values, 30), 20)
        self.assertEqual(percentile(values, 40), 20)
        self.assertEqual(percentile(values, 50), 35)
        self.assertEqual(percentile(values, 100), 50)

    def test_ten_values(self):
        values = list(range(1, 11))
        self.assertEqual(percentile(values, 90), 9)
        self.assertEqual(percentile(values, 99), 10)

    def test_bad_input(self):
        with self.assertRaises(ValueError):
            percentile([], 50)
        with self.assertRaises(ValueError):
            percentile([1], 101)


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hits = parse_file(LOG)

    def test_busiest_endpoint(self):
        top = summarise(self.hits)[0]
        self.assertEqual((top.method, top.endpoint), ("GET", "/api/orders/{id}"))
        ms = sorted(h.ms for h in self.hits if h.endpoint == top.endpoint and h.method == "GET")
        self.assertEqual(top.hits, len(ms))
        self.assertEqual(top.p50, ms[(len(ms) + 1) // 2 - 1])

    def test_status_classes(self):
        classes = status_classes(self.hits)
        self.assertEqual(sum(classes.values()), 240)
        self.assertGreater(classes["2xx"], classes["5xx"])

    def test_histogram(self):
        self.assertEqual(histogram([0, 49, 50, 120, 9000], [0, 50, 100]), [2, 1, 2])

    def test_clients(self):
        self.assertEqual(len(busiest_clients(self.hits, 3)), 3)

    def test_render(self):
        text = render(self.hits)
        self.assertTrue(text.startswith("240 requests"))


if __name__ == "__main__":
    unittest.main()
