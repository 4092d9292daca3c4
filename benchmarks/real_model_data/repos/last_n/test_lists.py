import unittest

from lists import first_n, last_n


class ListsTest(unittest.TestCase):
    def test_last_n(self):
        self.assertEqual(last_n([1, 2, 3, 4, 5], 2), [4, 5])

    def test_first_n(self):
        self.assertEqual(first_n([1, 2, 3], 2), [1, 2])


if __name__ == "__main__":
    unittest.main()
