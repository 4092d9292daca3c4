import unittest

from count import count_vowels


class CountTest(unittest.TestCase):
    def test_lowercase(self):
        self.assertEqual(count_vowels("banana"), 3)

    def test_uppercase_counts_too(self):
        self.assertEqual(count_vowels("AEIOU and more"), 8)


if __name__ == "__main__":
    unittest.main()
