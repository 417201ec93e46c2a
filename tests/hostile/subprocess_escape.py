# expect: ok
import subprocess
import sys


def solve():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    return 4
