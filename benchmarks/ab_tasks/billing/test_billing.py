import unittest
from decimal import Decimal

from billing import Invoice, Line, format_cents, parse_code, rate_for, to_cents
from billing.discounts import BadCode
from billing.money import MoneyError, split
from billing.tax import UnknownRegion


class MoneyTest(unittest.TestCase):
    def test_to_cents_rounds_half_up(self):
        self.assertEqual(to_cents("12.345"), 1235)
        self.assertEqual(to_cents("0.005"), 1)
        self.assertEqual(to_cents("1,299.99"), 129999)
        self.assertEqual(to_cents(3), 300)

    def test_to_cents_refuses_garbage(self):
        with self.assertRaises(MoneyError):
            to_cents("twelve")
        with self.assertRaises(MoneyError):
            to_cents("inf")

    def test_split_adds_up(self):
        self.assertEqual(split(100, [1, 1, 1]), [33, 33, 34])
        self.assertEqual(sum(split(999, [250, 125, 700])), 999)
        self.assertEqual(split(50, [0, 0]), [0, 50])

    def test_format(self):
        self.assertEqual(format_cents(123456), "$1,234.56")
        self.assertEqual(format_cents(-5), "-$0.05")
        self.assertEqual(format_cents(1000, "EUR"), "€10.00")
        self.assertEqual(format_cents(150000, "JPY"), "¥1,500")


class TaxTest(unittest.TestCase):
    def test_rates(self):
        self.assertEqual(rate_for("US-CA"), Decimal("7.25"))
        self.assertEqual(rate_for("us-ca", "food"), Decimal(0))
        self.assertEqual(rate_for("DE", "books"), Decimal(7))
        self.assertEqual(rate_for("IE", "food"), Decimal(0))
        self.assertEqual(rate_for("IE", "books"), Decimal(0))

    def test_unknown(self):
        with self.assertRaises(UnknownRegion):
            rate_for("XX")
        with self.assertRaises(ValueError):
            rate_for("DE", "weapons")


class CodeTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(parse_code("save10").value, 10)
        self.assertEqual(parse_code("OFF500").kind, "fixed")
        self.assertEqual(parse_code("B3G1:books").category, "books")
        with self.assertRaises(BadCode):
            parse_code("FREE")


class InvoiceTest(unittest.TestCase):
    def test_plain_invoice(self):
        inv = Invoice("US-CA").add(Line.of("Desk lamp", "40.00")).add(Line.of("Bulb", "2.50", 4))
        self.assertEqual(inv.subtotal, 5000)
        self.assertEqual(inv.tax, 363)  # 7.25 % of 50.00 = 3.625 → 3.63
        self.assertEqual(inv.total, 5363)

    def test_food_exempt(self):
        inv = Invoice("US-TX").add(Line.of("Bread", "3.20", category="food"))
        inv.add(Line.of("Pan", "20.00"))
        self.assertEqual(inv.tax, 125)

    def test_percent_discount_before_tax(self):
        inv = Invoice("DE").add(Line.of("Chair", "100.00")).apply("SAVE10")
        self.assertEqual(inv.discount, 1000)
        self.assertEqual(inv.tax, 1710)  # 19 % of 90.00
        self.assertEqual(inv.total, 10710)

    def test_fixed_discount_spread_before_tax(self):
        inv = Invoice("GB").add(Line.of("Kettle", "30.00")).add(Line.of("Mug", "10.00", 2))
        inv.apply("OFF500")
        self.assertEqual(inv.discounts(), [300, 200])
        self.assertEqual(inv.taxes(), [540, 360])  # 20 % of 27.00 and of 18.00
        self.assertEqual(inv.total, 4500 + 900)

    def test_category_discount(self):
        inv = Invoice("FR").add(Line.of("Novel", "20.00", category="books"))
        inv.add(Line.of("Lamp", "50.00"))
        inv.apply("SAVE20:books")
        self.assertEqual(inv.discounts(), [400, 0])
        self.assertEqual(inv.taxes(), [88, 1000])  # 5.5 % of 16.00, 20 % of 50.00

    def test_bundle(self):
        inv = Invoice("US-OR").add(Line.of("Sock", "4.00", 8)).apply("B3G1")
        self.assertEqual(inv.discount, 800)
        self.assertEqual(inv.tax, 0)
        self.assertEqual(inv.total, 2400)

    def test_discounts_never_exceed_the_line(self):
        inv = Invoice("US-OR").add(Line.of("Pin", "1.00")).apply("OFF500").apply("SAVE50")
        self.assertEqual(inv.discounts(), [100])
        self.assertEqual(inv.total, 0)

    def test_render(self):
        inv = Invoice("US-NY").add(Line.of("Scarf", "25.00", category="clothing"))
        inv.add(Line.of("Umbrella", "15.00")).apply("SAVE10")
        text = inv.render()
        self.assertIn("total", text)
        self.assertTrue(text.endswith("$36.54"), text)


if __name__ == "__main__":
    unittest.main()
