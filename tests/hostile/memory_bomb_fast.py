# expect: memory
def solve():
    return bytearray(10**12)
