"""Greetings."""


def greet(name, greeting="Helo"):
    """A greeting for name, e.g. "Hello, Ana!"."""
    return f"{greeting}, {name}!"
