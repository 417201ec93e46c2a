# expect: crash
def solve():
    x = []
    x.append(x)
    return x
