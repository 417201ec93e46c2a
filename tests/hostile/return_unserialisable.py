# expect: crash
def solve():
    return {"obj": object()}
