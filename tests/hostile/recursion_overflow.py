# expect: crash
def solve():
    return solve() + 1
