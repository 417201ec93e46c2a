# expect: crash
def not_the_entry():
    return 1
