import unittest

from greet import greet


class GreetTest(unittest.TestCase):
    def test_default_greeting(self):
        self.assertEqual(greet("Ana"), "Hello, Ana!")

    def test_custom_greeting(self):
        self.assertEqual(greet("Ana", "Hi"), "Hi, Ana!")


if __name__ == "__main__":
    unittest.main()
