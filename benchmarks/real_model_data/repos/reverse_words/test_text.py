import unittest

from text import reverse_words, shout


class TextTest(unittest.TestCase):
    def test_reverse_words(self):
        self.assertEqual(reverse_words("hello big world"), "world big hello")

    def test_shout(self):
        self.assertEqual(shout("hi"), "HI!")


if __name__ == "__main__":
    unittest.main()
