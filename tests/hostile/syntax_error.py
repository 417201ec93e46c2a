# expect: syntax
def solve(:
    return 1
