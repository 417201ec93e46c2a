# expect: timeout
def solve():
    while True:
        pass
