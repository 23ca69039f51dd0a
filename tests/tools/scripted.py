"""Do what the JSON arguments say; by default report what the process received.

Arguments come on stdin, or (when stdin is empty) from the file named by argv[1].
Keys: ``progress`` (list of [n, total, message] written as JSON lines on the progress
channel, the descriptor named by TOOLBRIDGE_PROGRESS_FD), ``channel`` (raw text written to
that descriptor), ``stderr`` (text for stderr), ``stdout`` (raw text for stdout instead of
the report), ``exit`` (exit status), ``kill_self`` (end by SIGKILL).
The report: ``{"args", "argv", "cwd", "env", "stdin", "payload_file"}``; ``env`` is the
environment exactly as received at exec (read from /proc/self/environ), ``payload_file``
describes argv[1] when it was the arguments file: its path and modes.
"""

import json
import os
import signal
import stat
import sys

raw_stdin = sys.stdin.read()
payload_file = None
if raw_stdin:
    args = json.loads(raw_stdin)
else:
    path = sys.argv[1]
    with open(path, encoding="utf-8") as file:
        args = json.load(file)
    payload_file = {
        "path": path,
        "mode": stat.S_IMODE(os.stat(path).st_mode),
        "dir_mode": stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode),
    }

if "progress" in args or "channel" in args:
    with os.fdopen(int(os.environ["TOOLBRIDGE_PROGRESS_FD"]), "w", encoding="utf-8") as channel:
        for n, total, message in args.get("progress", []):
            line = {"progress": n, "total": total, "message": message}
            channel.write(json.dumps(line) + "\n")
        channel.write(args.get("channel", ""))
if "stderr" in args:
    sys.stderr.write(args["stderr"])
    sys.stderr.flush()
if args.get("kill_self"):
    os.kill(os.getpid(), signal.SIGKILL)
if "stdout" in args:
    sys.stdout.write(args["stdout"])
else:
    with open("/proc/self/environ", "rb") as file:
        entries = [e.decode() for e in file.read().split(b"\0") if e]
    env = dict(entry.split("=", 1) for entry in entries)
    report = {
        "args": args,
        "argv": sys.argv[1:],
        "cwd": os.getcwd(),
        "env": env,
        "stdin": raw_stdin,
        "payload_file": payload_file,
    }
    sys.stdout.write(json.dumps(report))
sys.stdout.flush()
sys.exit(args.get("exit", 0))
