"""Write a lot, fast: usage output_bomb.py STDOUT_MIB STDERR_MIB."""

import os
import sys

block = b"x" * (1024 * 1024 - 1) + b"\n"
for fd, mib in ((1, int(sys.argv[1])), (2, int(sys.argv[2]))):
    for _ in range(mib):
        view = memoryview(block)
        while view:
            view = view[os.write(fd, view) :]
