"""Start a grandchild that ignores SIGTERM and inherits stdout, then exit or hang.

usage: forker.py exit|hang

When the grandchild is ready, ``{"pgid": <process group>}`` is written to stderr.
"""

import json
import os
import subprocess
import sys
import time

GRANDCHILD = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "sys.stderr.write('ready\\n'); sys.stderr.flush()\n"
    "time.sleep(60)\n"
)

grandchild = subprocess.Popen([sys.executable, "-S", "-c", GRANDCHILD], stderr=subprocess.PIPE)
assert grandchild.stderr is not None
grandchild.stderr.readline()
sys.stderr.write(json.dumps({"pgid": os.getpgrp(), "grandchild": grandchild.pid}) + "\n")
sys.stderr.flush()
if sys.argv[1] == "hang":
    time.sleep(60)
