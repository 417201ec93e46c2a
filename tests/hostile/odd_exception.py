# expect: crash
# An exception whose __str__ raises, and whose message would be 10 MB.
class Odd(Exception):
    def __str__(self):
        raise RuntimeError("no text for you")


def solve():
    try:
        raise ValueError("x" * 10_000_000)
    except ValueError:
        raise Odd()
