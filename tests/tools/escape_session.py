"""Start a grandchild in its own session (out of reach of group signals) that holds stdout open,
print ``{"escapee": <pid>}`` on stdout and exit."""

import json
import subprocess
import sys

escapee = subprocess.Popen(
    [sys.executable, "-S", "-c", "import time; time.sleep(60)"], start_new_session=True
)
sys.stdout.write(json.dumps({"escapee": escapee.pid}) + "\n")
sys.stdout.flush()
