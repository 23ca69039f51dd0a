"""What redacting a tool's declared secrets in all their forms costs (secrets.redact), per text.

    .venv/bin/python benchmarks/secret_forms.py [--reps 7] [--secrets 1 5]

``before``: the forms redacted until the encoded ones came (the value, JSON-escaped, a value's
lines), one alternation compiled on every call, as ``redact`` did. ``after``: every form
(``secret_forms``: those, percent-encoded, base64 at three alignments and URL-safe, whole and
wrapped, hex, reversed) in one alternation built once per set of secrets and cached, then the
joined search of blocks of base64 lines. Texts: a live log line (100 characters), an error
text (1,000 characters: what stderr's tail quotes), 16 KB of log, a 1 MB result; each without
a secret (the common path) and, for the 16 KB log, with the secret base64-encoded in it.
Also the first call with a new set of secrets (the alternation built: once per call's secrets).

Cells: the median time per redaction over repetitions (µs).
"""

from __future__ import annotations

import argparse
import base64
import functools
import json
import random
import re
import statistics
import string
import time
from collections.abc import Callable, Mapping

from mcp_toolbridge.secrets import _matcher, redact


def _old_forms(value: str) -> set[str]:
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    lines = value.splitlines()
    if len(lines) > 1:
        forms.update(line.strip() for line in lines if len(line.strip()) >= 8)
    return {form for form in forms if form}


def old_redact(text: str, secrets: Mapping[str, str]) -> str:
    by_form: dict[str, str] = {}
    for secret_id, value in secrets.items():
        for form in _old_forms(value):
            by_form.setdefault(form, secret_id)
    if not text:
        return text
    ordered = sorted(by_form, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(form) for form in ordered))
    return pattern.sub(lambda match: f"[redacted:{by_form[match.group(0)]}]", text)


def _text(rng: random.Random, size: int) -> str:
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))) for _ in range(500)]
    out: list[str] = []
    length = 0
    while length < size:
        line = " ".join(rng.choices(words, k=rng.randint(4, 14))) + "\n"
        out.append(line)
        length += len(line)
    return "".join(out)[:size]


def _time(fn: Callable[[], object], reps: int, inner: int) -> float:
    runs = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        runs.append((time.perf_counter() - start) / inner * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--secrets", type=int, nargs="+", default=[1, 5])
    args = parser.parse_args()
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + "-_/+"
    for count in args.secrets:
        secrets = {f"svc/key{i}": "".join(rng.choices(alphabet, k=40)) for i in range(count)}
        first = next(iter(secrets.values()))
        log = _text(rng, 16_384)
        encoded = base64.b64encode(("x" * 20 + first + "\n").encode() * 3).decode()
        with_secret = log[:8000] + encoded + log[8000:]
        cases = {
            "log line, 100 chars": (_text(rng, 100).strip(), 2000),
            "error text, 1,000 chars": (_text(rng, 1000), 500),
            "16 KB log": (log, 50),
            "16 KB log, base64 secret": (with_secret, 50),
            "1 MB result": (_text(rng, 1_000_000), 2),
        }
        print(f"\n{count} secret(s) of 40 characters: µs per redaction, median of {args.reps}")
        print(f"{'text':<28}{'before':>10}{'after':>10}{'ratio':>8}")
        for name, (text, inner) in cases.items():
            before = _time(functools.partial(old_redact, text, secrets), args.reps, inner)
            after = _time(functools.partial(redact, text, secrets), args.reps, inner)
            print(f"{name:<28}{before:>10.1f}{after:>10.1f}{after / before:>8.2f}")

        def cold(s: Mapping[str, str] = secrets) -> None:
            _matcher.cache_clear()
            redact("x", s)

        built = _time(cold, args.reps, 20)
        matcher = _matcher(tuple(sorted(secrets.items())))
        forms = len(matcher.ids) if matcher else 0
        print(f"{'first call (alternation built)':<28}{'':>10}{built:>10.1f}   ({forms} forms)")


if __name__ == "__main__":
    main()
