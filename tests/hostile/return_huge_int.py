# expect: crash
def solve():
    return 10**100000
