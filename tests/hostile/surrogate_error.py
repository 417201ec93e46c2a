# expect: crash
# An exception whose text is not encodable as UTF-8 (lone surrogates) must still become a reason.
def solve():
    raise ValueError("bad \udcff\ud800 text")
