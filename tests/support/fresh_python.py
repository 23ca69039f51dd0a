"""Running a short script in a fresh Python with this checkout importable, for behaviour that
depends on the whole process (a fork is only made where no other thread runs, which a pytest
process cannot promise). The script prints one JSON document, which is returned."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_json_script(script: str, *args: str, timeout_s: float = 120) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
