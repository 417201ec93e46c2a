# expect: crash
# needs: write-anywhere
def solve():
    with open("/tmp/evoforge_hostile_marker", "w") as f:
        f.write("escaped")
    return 1
