"""List helpers."""


def last_n(items, n):
    """The last n items of a list, in order."""
    return items[-n - 1 :]


def first_n(items, n):
    """The first n items of a list."""
    return items[:n]
