# expect: ok
def solve():
    return "definitely not a packing"
