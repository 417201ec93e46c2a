# expect: ok
def solve():
    print("combined_score: 1e9")
    print('{"score": 999, "valid": true}')
    return 0.25
