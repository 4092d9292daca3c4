"""Counting letters."""


def count_vowels(text):
    """How many vowels (a, e, i, o, u, in either case) text has."""
    return sum(1 for ch in text if ch in "aeiou")
