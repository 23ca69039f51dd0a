"""The built artifacts, made once per run with a standard builder (``uv build``: the sdist,
then the wheel from the sdist), and what running them the way users do needs: uv, its
environment, a project folder and a home folder of their own.

uv comes from the dev extra (beside the test's Python). Its cache is ``.ci/uv-cache/`` in the
checkout (gitignored), so a second run downloads nothing; it never downloads a Python (the
interpreter running the tests is the one uv uses, as a host application names its own)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUI_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
NETWORK = ("SSL_CERT_FILE", "SSL_CERT_DIR")
"""The PATH a GUI app on macOS starts servers with (launchd's)."""


def find_uv() -> Path | None:
    beside = Path(sys.executable).parent / "uv"
    if beside.is_file():
        return beside
    found = shutil.which("uv")
    return Path(found) if found else None


@pytest.fixture(scope="session")
def uv() -> Path:
    found = find_uv()
    if found is None:
        pytest.skip("uv is not installed (it comes with the dev extra: ./scripts/setup dev)")
    return found


@pytest.fixture(scope="session")
def uv_env() -> dict[str, str]:
    """What uv is run with, beside PATH and HOME: this machine's uv settings, certificate
    authorities and proxies (as the user's uv sees them), the shared cache, this Python, no
    downloads of Pythons."""
    passed = {
        k: v
        for k, v in os.environ.items()
        if k.startswith("UV_") or k in NETWORK or k.lower().endswith("_proxy")
    }
    return {
        **passed,
        "UV_CACHE_DIR": os.environ.get("TOOLBRIDGE_TEST_UV_CACHE", str(ROOT / ".ci" / "uv-cache")),
        "UV_PYTHON": sys.executable,
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_NO_CONFIG": "1",
    }


@dataclass(frozen=True)
class Artifacts:
    wheel: Path
    sdist: Path


@pytest.fixture(scope="session")
def artifacts(
    uv: Path, uv_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Artifacts:
    out = tmp_path_factory.mktemp("dist")
    env = {**os.environ, **uv_env}
    subprocess.run(
        [str(uv), "build", "--quiet", "--out-dir", str(out), str(ROOT)],
        env=env,
        cwd=out,
        check=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    (wheel,) = out.glob("mcp_toolbridge-*.whl")
    (sdist,) = out.glob("mcp_toolbridge-*.tar.gz")
    return Artifacts(wheel, sdist)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("the folder meant\n", encoding="utf-8")
    return folder.resolve()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder
