# expect: ok
# Lone surrogates in the returned value and raw invalid bytes on stdout/stderr.
import os


def solve():
    os.write(1, b"\xff\xfe\xfd invalid utf-8\n")
    os.write(2, b"\xc3\x28\n")
    return {"key \udcff": "value \ud800", "n": 1}
