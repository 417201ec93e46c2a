# expect: crash
# Escape sequences in output and in the error: show/verify must not pass them to a terminal.
import sys


def solve():
    print("\x1b]0;owned\x07\x1b[2J\x1b[31mred")
    sys.stderr.write("\x1b[1A\x1b[K")
    raise RuntimeError("\x1b[2J\x1b]52;c;aGVsbG8=\x07clipboard")
