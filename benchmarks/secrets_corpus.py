# ruff: noqa: E501
"""The corpus the secret scan is measured on: tool output with no secret in it, and secrets of
every rule family planted into it.

    .venv/bin/python benchmarks/secrets_corpus.py build   # rewrite benchmarks/sets/secrets/

**Clean** (``benchmarks/sets/secrets/*``, kept in the repository so that every run and the
test ``tests/bridge/test_secret_corpus.py`` read the same bytes): the output tools print all
day, which is full of ids, hashes and base64 that a careless scanner reads as secrets.

- ``git-log.txt``: ``git log --stat`` and ``git log -p`` of this repository's docs (real);
- ``api-*.json``: JSON API responses in the shapes of GitHub, npm, a container registry,
  Kubernetes, AWS EC2, a payments API and a chat API: commit SHAs, node ids, UUIDs, digests,
  integrity hashes, ETags, request ids, object ids with prefixes (generated, seeded);
- ``build.log``: pip, npm, docker, cargo, webpack and pytest output with wheel hashes, layer
  digests, chunk hashes and timings (generated, seeded);
- ``bundle.min.js``: a minified JavaScript bundle: short names, inlined base64 images, hex
  colours, a base64 alphabet, source-map and integrity comments (generated, seeded).

**Planted** (:func:`planted`, made at run time, never written to disk): one document per
secret, a clean excerpt with a real-looking (random, seeded) secret of one family written the
way tools print it: in an ``export``, a ``.env`` line, a JSON field, a URL, a log line, a PEM
block. :data:`FAMILIES` maps each family to the rule ids that count as found for it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETS = ROOT / "benchmarks" / "sets" / "secrets"
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
UPPER_ALNUM = string.ascii_uppercase + string.digits


def clean_files() -> list[Path]:
    """The clean corpus, in a stable order."""
    return sorted(p for p in SETS.iterdir() if p.is_file() and p.suffix != ".md")


def clean_texts() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in clean_files()}


# -- building the clean corpus ----------------------------------------------------------------


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _sha(rng: random.Random) -> str:
    return hashlib.sha1(rng.randbytes(20)).hexdigest()


def _sha256(rng: random.Random) -> str:
    return hashlib.sha256(rng.randbytes(32)).hexdigest()


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(bytes=rng.randbytes(16), version=4))


def _b64(rng: random.Random, n: int) -> str:
    return base64.b64encode(rng.randbytes(n)).decode()


def _ts(rng: random.Random) -> str:
    return (
        f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
    )


WORDS = (
    "fix add remove update refactor parser cache index policy sandbox server client test docs "
    "build release bump deps config loader catalog search error timeout retry stream output "
    "truncate session worker thread event loop handler schema manifest tool call result"
).split()


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _github(rng: random.Random) -> object:
    def user() -> dict[str, object]:
        login = _rand(rng, string.ascii_lowercase, rng.randint(4, 10))
        uid = rng.randint(1000, 99_999_999)
        node = base64.b64encode(f"04:User{uid}".encode()).decode().rstrip("=")
        return {
            "login": login,
            "id": uid,
            "node_id": f"MDQ6VXNlcj{node[10:]}",
            "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
            "gravatar_id": "",
            "url": f"https://api.github.com/users/{login}",
            "type": "User",
            "site_admin": False,
        }

    commits = []
    for _ in range(150):
        sha = _sha(rng)
        author = user()
        commits.append(
            {
                "sha": sha,
                "node_id": "C_kwDO" + _rand(rng, ALNUM + "-_", 40),
                "commit": {
                    "author": {"name": author["login"], "date": _ts(rng)},
                    "message": _words(rng, rng.randint(4, 12)),
                    "tree": {"sha": _sha(rng), "url": f"https://api.github.com/git/trees/{sha}"},
                    "comment_count": rng.randint(0, 4),
                    "verification": {
                        "verified": True,
                        "reason": "valid",
                        "signature": None,
                        "payload": None,
                    },
                },
                "url": f"https://api.github.com/repos/acme/widgets/commits/{sha}",
                "html_url": f"https://github.com/acme/widgets/commit/{sha}",
                "author": author,
                "parents": [{"sha": _sha(rng)} for _ in range(rng.randint(1, 2))],
            }
        )
    return commits


def _npm(rng: random.Random) -> object:
    versions = {}
    for minor in range(100):
        version = f"4.{minor}.{rng.randint(0, 9)}"
        digest = rng.randbytes(64)
        versions[version] = {
            "name": "left-widget",
            "version": version,
            "dist": {
                "integrity": "sha512-" + base64.b64encode(digest).decode(),
                "shasum": hashlib.sha1(digest).hexdigest(),
                "tarball": f"https://registry.npmjs.org/left-widget/-/left-widget-{version}.tgz",
                "fileCount": rng.randint(5, 80),
                "unpackedSize": rng.randint(10_000, 900_000),
                "signatures": [
                    {
                        "keyid": "SHA256:" + _b64(rng, 32).rstrip("="),
                        "sig": "MEUCI" + _b64(rng, 66),
                    }
                ],
            },
            "_npmUser": {"name": "widgetbot", "email": "bot@widgets.example"},
            "gitHead": _sha(rng),
        }
    return {"_id": "left-widget", "_rev": f"112-{_rand(rng, HEX, 32)}", "versions": versions}


def _registry(rng: random.Random) -> object:
    layers = [
        {
            "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
            "digest": "sha256:" + _sha256(rng),
            "size": rng.randint(1_000, 90_000_000),
        }
        for _ in range(12)
    ]
    return {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "digest": "sha256:" + _sha256(rng),
                "platform": {"architecture": arch, "os": "linux"},
                "annotations": {"org.opencontainers.image.revision": _sha(rng)},
            }
            for arch in ("amd64", "arm64", "ppc64le", "s390x")
        ],
        "config": {"digest": "sha256:" + _sha256(rng), "size": 7023},
        "layers": layers,
    }


def _kubernetes(rng: random.Random) -> object:
    pods = []
    for i in range(60):
        name = f"api-{_rand(rng, HEX, 10)}-{_rand(rng, string.ascii_lowercase + string.digits, 5)}"
        pods.append(
            {
                "metadata": {
                    "name": name,
                    "namespace": "prod",
                    "uid": _uuid(rng),
                    "resourceVersion": str(rng.randint(10**6, 10**8)),
                    "labels": {"app": "api", "pod-template-hash": _rand(rng, HEX, 10)},
                    "annotations": {
                        "kubectl.kubernetes.io/restartedAt": _ts(rng),
                        "checksum/config": _sha256(rng),
                    },
                },
                "spec": {
                    "serviceAccountName": "api",
                    "containers": [
                        {
                            "name": "api",
                            "image": f"ghcr.io/acme/api@sha256:{_sha256(rng)}",
                            "env": [
                                {"name": "LOG_LEVEL", "value": "info"},
                                {
                                    "name": "DB_PASSWORD",
                                    "valueFrom": {
                                        "secretKeyRef": {"name": "db", "key": "password"}
                                    },
                                },
                            ],
                        }
                    ],
                },
                "status": {
                    "phase": "Running",
                    "podIP": f"10.{i}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                    "containerStatuses": [
                        {
                            "containerID": "containerd://" + _sha256(rng),
                            "imageID": "ghcr.io/acme/api@sha256:" + _sha256(rng),
                            "restartCount": rng.randint(0, 3),
                        }
                    ],
                },
            }
        )
    return {"apiVersion": "v1", "kind": "PodList", "items": pods}


def _ec2(rng: random.Random) -> object:
    def rid(prefix: str, n: int = 17) -> str:
        return f"{prefix}-{_rand(rng, HEX, n)}"

    instances = []
    for _ in range(80):
        instances.append(
            {
                "InstanceId": rid("i"),
                "ImageId": rid("ami"),
                "InstanceType": rng.choice(["t3.micro", "m7i.large", "c7g.xlarge"]),
                "KeyName": "deploy",
                "LaunchTime": _ts(rng),
                "PrivateDnsName": f"ip-10-0-{rng.randint(0, 255)}-{rng.randint(1, 254)}.ec2.internal",
                "SubnetId": rid("subnet"),
                "VpcId": rid("vpc"),
                "SecurityGroups": [{"GroupId": rid("sg"), "GroupName": "api"}],
                "IamInstanceProfile": {
                    "Arn": "arn:aws:iam::123456789012:instance-profile/api",
                    "Id": "AIPA" + _rand(rng, UPPER_ALNUM, 17),
                },
                "NetworkInterfaces": [
                    {"NetworkInterfaceId": rid("eni"), "MacAddress": "0e:5c:1d:22:9a:01"}
                ],
                "BlockDeviceMappings": [{"Ebs": {"VolumeId": rid("vol")}}],
            }
        )
    return {
        "Reservations": [
            {"ReservationId": rid("r"), "OwnerId": "123456789012", "Instances": instances}
        ],
        "ResponseMetadata": {"RequestId": _uuid(rng), "HTTPStatusCode": 200},
    }


def _payments(rng: random.Random) -> object:
    def oid(prefix: str) -> str:
        return f"{prefix}_{_rand(rng, ALNUM, 24)}"

    return {
        "object": "list",
        "url": "/v1/charges",
        "has_more": True,
        "data": [
            {
                "id": oid("ch"),
                "object": "charge",
                "amount": rng.randint(100, 99_999),
                "balance_transaction": oid("txn"),
                "customer": oid("cus"),
                "payment_intent": oid("pi"),
                "payment_method": oid("pm"),
                "receipt_url": f"https://pay.example/receipts/{oid('acct')}/{oid('ch')}",
                "fingerprint": _rand(rng, ALNUM, 16),
                "created": rng.randint(1_700_000_000, 1_800_000_000),
                "idempotency_key": _uuid(rng),
            }
            for _ in range(120)
        ],
    }


def _chat(rng: random.Random) -> object:
    return {
        "ok": True,
        "messages": [
            {
                "type": "message",
                "user": "U0" + _rand(rng, UPPER_ALNUM, 9),
                "team": "T0" + _rand(rng, UPPER_ALNUM, 9),
                "ts": f"{rng.randint(1_700_000_000, 1_800_000_000)}.{rng.randint(0, 999999):06d}",
                "client_msg_id": _uuid(rng),
                "text": _words(rng, rng.randint(3, 20)),
                "blocks": [{"type": "rich_text", "block_id": _rand(rng, ALNUM + "=+/", 5)}],
                "files": [
                    {
                        "id": "F0" + _rand(rng, UPPER_ALNUM, 9),
                        "url_private": "https://files.chat.example/files-pri/"
                        + _rand(rng, UPPER_ALNUM, 11)
                        + "/report.pdf",
                        "md5": hashlib.md5(rng.randbytes(8)).hexdigest(),
                    }
                ],
            }
            for _ in range(120)
        ],
        "response_metadata": {"next_cursor": "bmV4dF90czox" + _b64(rng, 12)},
    }


def _build_log(rng: random.Random) -> str:
    out: list[str] = []
    for _ in range(20):
        pkg = rng.choice(["anyio", "pydantic-core", "numpy", "httpx2", "rpds-py", "uvloop"])
        version = f"{rng.randint(0, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 9)}"
        wheel = f"{pkg.replace('-', '_')}-{version}-cp311-cp311-manylinux_2_17_x86_64.whl"
        out.append(f"Collecting {pkg}=={version}")
        out.append(f"  Downloading {wheel} ({rng.randint(1, 900)} kB)")
        out.append(f"  Hash: sha256:{_sha256(rng)}")
        out.append(f"    {pkg}=={version} --hash=sha256:{_sha256(rng)}")
    out.append("Successfully installed " + " ".join(f"pkg{i}-1.{i}" for i in range(30)))
    for step in range(1, 14):
        out.append(f"#{step} [internal] load build definition from Dockerfile")
        out.append(
            f"#{step} sha256:{_sha256(rng)} {rng.randint(1, 90)}.{rng.randint(0, 9)}MB / 89.1MB"
        )
        out.append(f"#{step} DONE {rng.random() * 9:.1f}s")
    out.append(f"#14 writing image sha256:{_sha256(rng)} done")
    out.append("#14 naming to ghcr.io/acme/api:latest done")
    for _ in range(30):
        out.append(
            f"npm http fetch GET 200 https://registry.npmjs.org/widget-{_rand(rng, 'abcdefghij', 5)}"
            f"/-/widget-1.{rng.randint(0, 9)}.0.tgz {rng.randint(5, 400)}ms (cache miss)"
        )
    out.append(f"added {rng.randint(200, 1300)} packages, and audited 1301 packages in 14s")
    for crate in ("serde", "tokio", "regex-automata", "hyper", "ring", "rustls"):
        out.append(f"   Compiling {crate} v1.{rng.randint(0, 40)}.{rng.randint(0, 9)}")
    out.append(
        f"    Finished `release` profile [optimized] target(s) in {rng.randint(20, 300)}.{rng.randint(10, 99)}s"
    )
    for _ in range(25):
        name = rng.choice(["index", "vendor", "chunk", "runtime", "app"])
        out.append(
            f"dist/assets/{name}-{_rand(rng, ALNUM + '_-', 8)}.js   "
            f"{rng.randint(1, 900)}.{rng.randint(0, 99):02d} kB │ gzip: {rng.randint(1, 300)}.{rng.randint(0, 99):02d} kB"
        )
    for _ in range(40):
        test = f"tests/{rng.choice(WORDS)}/test_{rng.choice(WORDS)}.py::test_{'_'.join(rng.choice(WORDS) for _ in range(4))}"
        out.append(f"{test} {rng.choice(['PASSED', 'PASSED', 'PASSED', 'SKIPPED', 'FAILED'])}")
    out.append(
        f"==== 812 passed, 3 skipped, 1 failed in {rng.randint(30, 300)}.{rng.randint(10, 99)}s ===="
    )
    out.append(f"go: downloading golang.org/x/crypto v0.{rng.randint(10, 40)}.0")
    out.append(
        f"ok  \tgithub.com/acme/api/internal/auth\t{rng.random():.3f}s\tcoverage: 81.2% of statements"
    )
    out.append(f"ci run id {_uuid(rng)}, cache key linux-pip-{_sha256(rng)}")
    return "\n".join(out) + "\n"


def _bundle(rng: random.Random) -> str:
    def ident() -> str:
        return rng.choice(string.ascii_letters + "_$") + _rand(rng, ALNUM + "_$", rng.randint(0, 2))

    parts = ['"use strict";(self.webpackChunkapp=self.webpackChunkapp||[]).push([[179],{']
    for _ in range(1500):
        a, b, c = ident(), ident(), ident()
        body = rng.choice(
            [
                f"function {a}({b},{c}){{return {b}.length>{c}?{b}.slice(0,{c}):{b}}}",
                f'var {a}="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";',
                f'const {a}={{color:"#{_rand(rng, HEX, 6)}",bg:"#{_rand(rng, HEX, 6)}"}};',
                f'{a}.src="data:image/png;base64,{_b64(rng, rng.randint(60, 300))}";',
                f'{a}.exports={{id:"{_rand(rng, HEX, 8)}",hash:"{_rand(rng, HEX, 20)}"}};',
                f"for(var {a}=0;{a}<{b}.length;{a}++){c}[{a}]={b}.charCodeAt({a})&255;",
                f'{a}.p="/static/js/";{a}.u=function({b}){{return"chunk-"+{b}+"."+{{"{_rand(rng, HEX, 4)}":"{_rand(rng, HEX, 8)}"}}[{b}]+".js"}};',
                f"var {a}=/^[0-9a-f]{{8}}-[0-9a-f]{{4}}-[1-5][0-9a-f]{{3}}-[89ab][0-9a-f]{{3}}-[0-9a-f]{{12}}$/i;",
                f'{a}.integrity="sha384-{_b64(rng, 48)}";',
                f'{a}.i18n={{"{_words(rng, 2)}":"{_words(rng, 5)}"}};',
                f'if(!{a})throw new Error("Minified React error #{rng.randint(1, 500)}; visit https://react.dev/errors/{rng.randint(1, 500)}?args[]={b}");',
                f'{a}.key="{_uuid(rng)}";{b}.nonce="{_b64(rng, 16)}";',
            ]
        )
        parts.append(f"{rng.randint(1000, 99999)}:function({a},{b},{c}){{{body}}},")
    parts.append("}]);\n//# sourceMappingURL=main." + _rand(rng, HEX, 20) + ".js.map\n")
    return "".join(parts)


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout


def build() -> None:
    """Rewrite the clean corpus (deterministic, except the git log, which is this
    repository's own history up to the commit the corpus was built from)."""
    rng = random.Random(20261128)
    SETS.mkdir(parents=True, exist_ok=True)
    stat = _git("log", "--stat", "--format=fuller", "-n", "250", "48a6d98")
    patch = _git("log", "-p", "--format=fuller", "-n", "40", "48a6d98", "--", "docs/")
    (SETS / "git-log.txt").write_text(stat + patch, encoding="utf-8")
    shapes: dict[str, Callable[[random.Random], object]] = {
        "github": _github,
        "npm": _npm,
        "registry": _registry,
        "kubernetes": _kubernetes,
        "ec2": _ec2,
        "payments": _payments,
        "chat": _chat,
    }
    for name, make in shapes.items():
        text = json.dumps(make(rng), indent=2)
        (SETS / f"api-{name}.json").write_text(text + "\n", encoding="utf-8")
    (SETS / "build.log").write_text("".join(_build_log(rng) for _ in range(8)), encoding="utf-8")
    (SETS / "bundle.min.js").write_text(_bundle(rng), encoding="utf-8")


# -- planted secrets ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plant:
    family: str
    secret: str
    """The secret value itself: what must not come back."""
    text: str
    """The line the secret is printed in."""


def _families(rng: random.Random) -> list[Plant]:
    def r(alphabet: str, n: int) -> str:
        return _rand(rng, alphabet, n)

    lower = string.ascii_lowercase + string.digits
    aws_id = "AKIA" + r("QRSTUVWXYZ234567", 16)
    aws_secret = r(ALNUM + "/+", 40)
    aws_id2 = "ASIA" + r("QRSTUVWXYZ234567", 16)
    aws_secret2 = r(ALNUM + "/+", 40)
    ghp = "ghp_" + r(ALNUM, 36)
    pem_body = "\n".join(_b64(rng, 48) for _ in range(12))
    jwt_header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    jwt_claims = (
        base64.urlsafe_b64encode(
            json.dumps({"sub": r(lower, 12), "iat": 1764300000, "scope": "admin"}).encode()
        )
        .decode()
        .rstrip("=")
    )
    jwt = f"{jwt_header}.{jwt_claims}.{base64.urlsafe_b64encode(rng.randbytes(32)).decode().rstrip('=')}"
    slack_bot = (
        f"xoxb-{rng.randint(10**11, 10**12 - 1)}-{rng.randint(10**12, 10**13 - 1)}-{r(ALNUM, 24)}"
    )
    hook = f"https://hooks.slack.com/services/T{r(UPPER_ALNUM, 10)}/B{r(UPPER_ALNUM, 10)}/{r(ALNUM, 24)}"
    gitlab = "glpat-" + r(ALNUM + "-_", 20)
    stripe = "sk_live_" + r(ALNUM, 99)
    google = "AIza" + r(ALNUM + "-_", 35)
    openai = "sk-proj-" + r(ALNUM + "-_", 74) + "T3BlbkFJ" + r(ALNUM + "-_", 73) + r(ALNUM, 1)
    anthropic = "sk-ant-api03-" + r(ALNUM + "-_", 93) + "AA"
    npm = "npm_" + r(ALNUM, 36)
    pypi = "pypi-AgEIcHlwaS5vcmc" + r(ALNUM + "-_", 70)
    sendgrid = "SG." + r(ALNUM + "-_", 22) + "." + r(ALNUM + "-_", 43)
    twilio = "SK" + r(HEX, 32)
    dbpass = r(ALNUM, 20)
    generic = r(ALNUM, 32)
    plants = [
        Plant(
            "aws",
            aws_secret,
            f"export AWS_ACCESS_KEY_ID={aws_id}\nexport AWS_SECRET_ACCESS_KEY={aws_secret}",
        ),
        Plant(
            "aws",
            aws_secret2,
            f"[default]\naws_access_key_id = {aws_id2}\naws_secret_access_key = {aws_secret2}",
        ),
        Plant("github", ghp, f"remote: https://x-access-token:{ghp}@github.com/acme/widgets.git"),
        Plant("github", "github_pat_" + r(ALNUM + "_", 82), ""),
        Plant("github", "gho_" + r(ALNUM, 36), ""),
        Plant("gitlab", gitlab, f'{{"private_token": "{gitlab}"}}'),
        Plant("slack", slack_bot, f"SLACK_BOT_TOKEN={slack_bot}"),
        Plant("slack", hook, f"posting to {hook} returned 200"),
        Plant(
            "private-key",
            pem_body,
            "-----BEGIN RSA PRIVATE KEY-----\n" + pem_body + "\n-----END RSA PRIVATE KEY-----",
        ),
        Plant(
            "private-key",
            pem_body[:64],
            "-----BEGIN OPENSSH PRIVATE KEY-----\n"
            + pem_body
            + "\n-----END OPENSSH PRIVATE KEY-----",
        ),
        Plant("jwt", jwt, f"Authorization: Bearer {jwt}"),
        Plant("stripe", stripe, f"STRIPE_SECRET_KEY={stripe}"),
        Plant(
            "google",
            google,
            f"https://maps.googleapis.com/maps/api/geocode/json?address=x&key={google}",
        ),
        Plant("openai", openai, f"OPENAI_API_KEY={openai}"),
        Plant("anthropic", anthropic, f'"api_key": "{anthropic}"'),
        Plant("npm", npm, f"//registry.npmjs.org/:_authToken={npm}"),
        Plant("pypi", pypi, f"password = {pypi}"),
        Plant("sendgrid", sendgrid, f"SENDGRID_API_KEY={sendgrid}"),
        Plant("twilio", twilio, f"TWILIO_API_KEY={twilio}"),
        Plant("url-password", dbpass, f"DATABASE_URL=postgres://app:{dbpass}@db.internal:5432/app"),
        Plant("generic", generic, f"API_SECRET={generic}"),
    ]
    return [p if p.text else Plant(p.family, p.secret, f"token: {p.secret}") for p in plants]


FAMILIES = sorted({p.family for p in _families(random.Random(0))})


def planted(seed: int = 7) -> list[tuple[Plant, str]]:
    """Each planted secret with the document it sits in: a clean excerpt around its line."""
    rng = random.Random(seed)
    texts = list(clean_texts().values())
    out = []
    for plant in _families(rng):
        host = rng.choice(texts)
        start = rng.randrange(0, max(1, len(host) - 4000))
        start = host.find("\n", start) + 1
        excerpt = host[start : start + 3000]
        cut = excerpt.rfind("\n", 0, 1500) + 1
        out.append((plant, excerpt[:cut] + plant.text + "\n" + excerpt[cut:]))
    return out


if __name__ == "__main__":
    if sys.argv[1:] != ["build"]:
        sys.exit(__doc__)
    build()
    for path in clean_files():
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size:,} bytes")
