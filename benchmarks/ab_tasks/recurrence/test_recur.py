import unittest
from datetime import datetime

from recur import RuleError, occurrences, parse
from recur.calendar import add_months, week_start, weekday_number


def days(moments):
    return [m.strftime("%Y-%m-%d %H:%M") for m in moments]


class ParseTest(unittest.TestCase):
    def test_rules(self):
        self.assertEqual(parse("every day at 9:00").kind, "daily")
        self.assertEqual(parse("Every  Weekday at 08:30").weekdays, frozenset(range(5)))
        self.assertEqual(parse("every mon,thu at 18:00").weekdays, frozenset({0, 3}))
        rule = parse("every 2 weeks on friday at 10:00")
        self.assertEqual((rule.interval, rule.weekdays), (2, frozenset({4})))
        self.assertEqual(parse("every month on day 31 at 12:00").day, 31)

    def test_describe_round_trip(self):
        for text in ("every day at 07:15", "every 3 weeks on monday,friday at 10:00"):
            self.assertEqual(parse(text).describe(), text)

    def test_errors(self):
        for text in (
            "every day at 25:00",
            "every funday at 10:00",
            "every month on day 32 at 1:00",
        ):
            with self.assertRaises(RuleError):
                parse(text)


class CalendarTest(unittest.TestCase):
    def test_helpers(self):
        self.assertEqual(weekday_number("Sun"), 6)
        self.assertEqual(str(add_months(datetime(2024, 1, 31).date(), 1)), "2024-02-29")
        self.assertEqual(str(week_start(datetime(2027, 1, 1).date())), "2026-12-28")


class OccurrenceTest(unittest.TestCase):
    def test_daily(self):
        got = occurrences(parse("every day at 09:00"), datetime(2024, 3, 1, 10, 0), 2)
        self.assertEqual(days(got), ["2024-03-02 09:00", "2024-03-03 09:00"])

    def test_weekdays_skip_the_weekend(self):
        got = occurrences(parse("every weekday at 08:30"), datetime(2024, 3, 8, 9, 0), 2)
        self.assertEqual(days(got), ["2024-03-11 08:30", "2024-03-12 08:30"])

    def test_monthly_clamps(self):
        got = occurrences(parse("every month on day 31 at 12:00"), datetime(2024, 1, 1), 3)
        self.assertEqual(days(got), ["2024-01-31 12:00", "2024-02-29 12:00", "2024-03-31 12:00"])

    def test_every_two_weeks_within_a_year(self):
        got = occurrences(parse("every 2 weeks on friday at 10:00"), datetime(2024, 3, 1), 3)
        self.assertEqual(days(got), ["2024-03-01 10:00", "2024-03-15 10:00", "2024-03-29 10:00"])

    def test_every_two_weeks_across_the_new_year(self):
        got = occurrences(parse("every 2 weeks on friday at 10:00"), datetime(2026, 12, 4), 5)
        self.assertEqual(
            days(got),
            [
                "2026-12-04 10:00",
                "2026-12-18 10:00",
                "2027-01-01 10:00",
                "2027-01-15 10:00",
                "2027-01-29 10:00",
            ],
        )

    def test_every_three_weeks_across_the_new_year(self):
        got = occurrences(parse("every 3 weeks on monday at 07:00"), datetime(2025, 12, 1), 3)
        self.assertEqual(days(got), ["2025-12-01 07:00", "2025-12-22 07:00", "2026-01-12 07:00"])


if __name__ == "__main__":
    unittest.main()
