"""What docs/deploy.md tells operators to use is valid and is what the tests run: the
Kubernetes manifests pass the Kubernetes API's schemas (offline, kubernetes-validate), their
serve arguments parse, their policy and tool manifest load; the HAProxy configurations are
the ones deploy/haproxy.py writes, and HAProxy accepts them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from mcp_types import JSONRPCError, jsonrpc_message_adapter

from mcp_toolbridge.cli.parsing import parse_args
from mcp_toolbridge.loaders import load_manifests
from mcp_toolbridge.policy import Policy
from tests.support.cluster import haproxy_module
from tests.support.rawstdio import REPO

KUBERNETES = REPO / "deploy" / "kubernetes"
KUBERNETES_VERSION = "1.31"
"""The oldest Kubernetes release still maintained when these were written."""
FILES = sorted(KUBERNETES.rglob("*.yaml"))


def _documents() -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in FILES:
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if document:
                found.append((path, document))
    return found


def _named(kind: str, name: str) -> dict[str, Any]:
    for _, document in _documents():
        if document["kind"] == kind and document["metadata"]["name"] == name:
            return document
    raise AssertionError(f"no {kind} {name}")


def test_the_manifests_are_there() -> None:
    kinds = sorted({d["kind"] for _, d in _documents()})
    assert kinds == [
        "ConfigMap",
        "Deployment",
        "PersistentVolumeClaim",
        "Secret",
        "Service",
        "StatefulSet",
    ]


@pytest.mark.parametrize(
    ("path", "document"),
    _documents(),
    ids=[
        f"{p.relative_to(KUBERNETES)}:{d['kind']}/{d['metadata']['name']}" for p, d in _documents()
    ],
)
def test_each_manifest_passes_the_kubernetes_schemas(path: Path, document: dict[str, Any]) -> None:
    kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def _serve_args(workload: dict[str, Any]) -> list[str]:
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    args: list[str] = container["args"]
    return [a.replace("$(POD_NAME)", "toolbridge-0") for a in args]


@pytest.mark.parametrize(
    ("kind", "name"), [("Deployment", "toolbridge"), ("StatefulSet", "toolbridge")]
)
def test_the_replicas_serve_arguments_parse(kind: str, name: str) -> None:
    args = parse_args(_serve_args(_named(kind, name)))
    assert args.verb == "serve" and args.http == "0.0.0.0:8765"
    assert args.replica == "toolbridge-0" and args.drain_timeout == 30.0
    grace = _named(kind, name)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > args.drain_timeout  # the drain ends before Kubernetes kills


def test_the_configmaps_policy_and_tools_load(tmp_path: Path) -> None:
    data = _named("ConfigMap", "toolbridge-config")["data"]
    policy = tmp_path / "policy.toml"
    policy.write_text(data["policy.toml"])
    loaded = Policy.load(policy, workspace=tmp_path, user_data=tmp_path)
    assert loaded.file.limits.calls == 120
    assert loaded.file.state.url == "redis://toolbridge-redis:6379/0"
    tools = tmp_path / "tools.json"
    tools.write_text(data["tools.json"])
    manifests = load_manifests([tools])
    assert manifests.tool_count == 1 and not manifests.report().problems
    assert json.loads(data["tools.json"])["tools"][0]["name"] == "echo"


def test_the_shipped_haproxy_configurations_are_what_deploy_haproxy_writes() -> None:
    render = haproxy_module().render
    local = [(f"r{i}", f"127.0.0.1:870{i}") for i in (1, 2, 3)]
    shipped = (REPO / "deploy" / "haproxy.cfg").read_text()
    assert shipped == render("127.0.0.1:8700", local)
    pods = [(f"toolbridge-{i}", f"toolbridge-{i}.toolbridge-pods:8765") for i in (0, 1, 2)]
    in_cluster = _named("ConfigMap", "toolbridge-haproxy")["data"]["haproxy.cfg"]
    assert in_cluster == render("0.0.0.0:8700", pods, resolve=True)


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy is not installed")
def test_haproxy_accepts_the_shipped_configuration() -> None:
    checked = subprocess.run(
        ["haproxy", "-c", "-f", str(REPO / "deploy" / "haproxy.cfg")],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr.decode()


def test_what_haproxy_answers_itself_is_a_json_rpc_error_an_mcp_client_reads() -> None:
    """Each ``http-error`` body of the shipped configuration, its ``%s`` made a server name
    as HAProxy does, is a JSON-RPC error the SDK's client reads (the error of a non-2xx JSON
    body is what it raises); the 502 and 504 name the replica, and each client connection
    carries one request unless ``--keep-alive`` was asked (docs/deploy.md)."""
    render = haproxy_module().render
    config = render("127.0.0.1:8700", [("r1", "127.0.0.1:8701"), ("r2", "127.0.0.1:8702")])
    answers: dict[int, str] = {}
    for line in config.splitlines():
        words = line.split(maxsplit=6)
        if words[:2] == ["http-error", "status"]:
            assert words[3:5] == ["content-type", "application/json"], line
            assert words[5] == ("lf-string" if "%s" in words[6] else "string"), line
            body = words[6].strip("'").replace("%s", "r1")
            parsed = jsonrpc_message_adapter.validate_json(body, by_name=False)
            assert isinstance(parsed, JSONRPCError) and parsed.id is None
            answers[int(words[2])] = parsed.error.message
    assert sorted(answers) == [502, 503, 504]
    assert answers[502].startswith("the server replica serving this request (r1) stopped")
    assert "(r1)" in answers[504] and "Nothing was run" in answers[503]
    assert "    option httpclose" in config.splitlines()
    kept = render("127.0.0.1:8700", [("r1", "127.0.0.1:8701")], keep_alive=True)
    assert "httpclose" not in kept and "http-error status 502" in kept
