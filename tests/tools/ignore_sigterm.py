"""Ignore SIGTERM, say so on stderr with ``{"pgid": ...}``, then sleep."""

import json
import os
import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stderr.write(json.dumps({"pgid": os.getpgrp()}) + "\n")
sys.stderr.flush()
time.sleep(60)
