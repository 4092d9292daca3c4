"""Text helpers."""


def reverse_words(sentence):
    """The words of a sentence in reverse order: "a b c" -> "c b a"."""
    return sentence[::-1]


def shout(sentence):
    """The sentence in capitals, with an exclamation mark."""
    return sentence.upper() + "!"
