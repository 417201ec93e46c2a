# expect: crash
def solve():
    return input()
