# expect: crash
# needs: write-parent
def solve():
    with open("../evoforge_hostile_marker", "w") as f:
        f.write("escaped")
    return 1
