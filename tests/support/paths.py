"""Where the repository, the test fixtures and the test tools are."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
TOOLS = ROOT / "tests" / "tools"
