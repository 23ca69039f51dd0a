"""The bash sub-policy's gate hooks: redirect paths as fs targets, and the exact-rule floor."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_toolbridge.bridge.gate import PolicyGate
from mcp_toolbridge.builtins.bash import SPEC as BASH
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.policy.compiled import Decision, Policy
from mcp_toolbridge.policy.grants import SessionRules
from mcp_toolbridge.policy.shell.hooks import shell_floor, shell_targets
from mcp_toolbridge.policy.shell.parse import splitter
from tests.support.policy_fixtures import load_policy_text

RULES = """
extends = "none"  # all of the policy: the default's bash ask would decide redirect targets
default_action = "ask"
[requires]
capabilities = ["shell.run"]
fs.read = ["{workspace}"]
fs.write = ["{workspace}"]
[[rules]]
permission = "bash"
pattern = "git *"
action = "allow"
[[rules]]
permission = "bash"
pattern = "find *"
action = "allow"
[[rules]]
permission = "bash"
pattern = "find . -name '*.o' -delete"
action = "allow"
[[rules]]
permission = "fs.write"
action = "allow"
[[rules]]
permission = "fs.read"
action = "allow"
"""


def _policy(tmp_path: Path, text: str = RULES) -> Policy:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return load_policy_text(tmp_path / "policy.toml", text, workspace=workspace)


def _gate(policy: Policy, command: str, session: SessionRules | None = None) -> Decision:
    """What PolicyGate does with the two hooks wired in (minus the watchdog and the ask)."""
    arguments = {"command": command}
    targets = policy.targets(BASH, arguments, roles=BASH.argument_roles, splitter=splitter)
    targets = shell_targets(policy, BASH, arguments, targets)
    denial = policy.check_capabilities(BASH, targets)
    if denial is not None:
        return Decision.refused(denial)
    decision = policy.decide(BASH, targets, session)
    return shell_floor(policy, BASH, arguments, decision, session)


def test_checkable_commands_keep_the_rules_decision(tmp_path: Path):
    policy = _policy(tmp_path)
    assert _gate(policy, "git status && git log -n 3").action == "allow"
    assert _gate(policy, "find . -name '*.py'").action == "allow"
    assert _gate(policy, "git status; ls").action == "ask"


def test_a_dangerous_flag_under_a_glob_allow_asks(tmp_path: Path):
    decision = _gate(_policy(tmp_path), "git status && find . -name '*.tmp' -delete")
    assert decision.action == "ask"
    assert decision.scope == "shell"
    assert "find -delete" in decision.rule


def test_an_exact_allow_rule_approves_the_exact_dangerous_form(tmp_path: Path):
    assert _gate(_policy(tmp_path), "find . -name '*.o' -delete").action == "allow"
    assert _gate(_policy(tmp_path), "find . -name '*.a' -delete").action == "ask"


def test_an_opaque_command_asks_even_under_an_allow_everything_rule(tmp_path: Path):
    policy = _policy(tmp_path, RULES + '[[rules]]\npermission = "bash"\naction = "allow"\n')
    assert _gate(policy, "ls -la").action == "allow"
    decision = _gate(policy, 'git status; eval "$(cat cmd.txt)"')
    assert decision.action == "ask"
    assert "eval" in decision.rule


def test_an_always_answer_approves_that_exact_command_only(tmp_path: Path):
    policy = _policy(tmp_path)
    session = SessionRules()
    command = "git status; X=$(date); echo $X"
    assert _gate(policy, command, session).action == "ask"
    arguments = {"command": command}
    targets = policy.targets(BASH, arguments, roles=BASH.argument_roles, splitter=splitter)
    session.add_always(BASH, shell_targets(policy, BASH, arguments, targets))
    assert _gate(policy, command, session).action == "allow"
    assert _gate(policy, command + " more", session).action == "ask"


def test_a_deny_is_never_loosened_or_replaced(tmp_path: Path):
    policy = _policy(tmp_path, RULES + '[[rules]]\npermission = "bash"\npattern = "rm *"\n'
                     'action = "deny"\n')  # fmt: skip
    assert _gate(policy, "git status; eval x; rm -rf build").action == "deny"


def test_redirect_targets_are_checked_as_paths(tmp_path: Path):
    policy = _policy(tmp_path)
    arguments = {"command": "git log > log.txt 2> /dev/null < in.txt"}
    targets = policy.targets(BASH, arguments, roles=BASH.argument_roles, splitter=splitter)
    targets = shell_targets(policy, BASH, arguments, targets)
    workspace = (tmp_path / "ws").resolve()
    assert targets.paths_write == (workspace / "log.txt",)
    assert targets.paths_read == (workspace / "in.txt",)
    assert _gate(policy, "git log > log.txt").action == "allow"
    refused = _gate(policy, "git log > /etc/cron.d/x")
    assert refused.action == "deny" and refused.scope == "capability"
    assert "/etc/cron.d/x" in refused.rule
    escaped = _gate(policy, "git log > ../outside.txt")
    assert escaped.action == "deny"


# -- the paths a command names (issue 4 audit) ------------------------------------------------

AUDIT_RULES = """
default_action = "by-safety"
[requires]
fs.read = ["{workspace}"]
fs.write = ["{workspace}"]
[[rules]]
permission = "bash"
pattern = { prefix = "git " }
action = "allow"
[[rules]]
permission = "bash"
pattern = "cat *"
action = "allow"
[[rules]]
permission = "bash"
pattern = { prefix = "rm " }
action = "allow"
[[rules]]
permission = "bash"
pattern = { prefix = "cp " }
action = "allow"
[[rules]]
permission = "bash"
pattern = { prefix = "echo " }
action = "allow"
[[rules]]
permission = "bash"
pattern = { prefix = "cd " }
action = "allow"
[[rules]]
permission = "bash"
pattern = { prefix = "grep " }
action = "allow"
[[rules]]
permission = "bash"
pattern = { prefix = "head " }
action = "allow"
[[rules]]
permission = "bash"
pattern = { prefix = "sort " }
action = "allow"
[[rules]]
permission = "bash"
pattern = { prefix = "find " }
action = "allow"
[[rules]]
permission = "bash"
pattern = { prefix = "xargs " }
action = "allow"
[[rules]]
permission = "fs.read"
pattern = "secrets/**"
action = "deny"
"""


ALLOW_ALL_BASH = '[[rules]]\npermission = "bash"\naction = "allow"\n'


@pytest.fixture
def audit(tmp_path: Path) -> tuple[Policy, Path]:
    """A workspace with a sibling that shares its name as a prefix, a symlink out of it, and a
    secrets folder under an fs.read deny rule."""
    base = Path(os.path.realpath(tmp_path))
    workspace = base / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "key.env").write_text("TOKEN=1\n")
    (workspace / "notes.txt").write_text("notes\n")
    (base / "ws_evil").mkdir()
    (base / "ws_evil" / "s.txt").write_text("secret\n")
    (base / "outside.txt").write_text("outside\n")
    (workspace / "dirlink").symlink_to(base / "ws_evil")
    return _policy(base, AUDIT_RULES), base


def _action(policy: Policy, command: str) -> Decision:
    return _gate(policy, command)


@pytest.mark.parametrize(
    "command",
    ["git log --output={base}/x/pwn", "git log --output {base}/x/pwn", "git diff --output=../pwn",
     "git format-patch -o {base}/x HEAD~1", "git archive -o {base}/a.zip HEAD"],
)  # fmt: skip
def test_git_options_that_write_files_are_write_targets(audit, command: str):
    policy, base = audit
    decision = _action(policy, command.format(base=base))
    assert decision.action == "deny" and decision.scope == "capability", decision
    assert "fs.write" in decision.rule
    assert _action(policy, "git log --output=log.txt").action == "allow"


@pytest.mark.parametrize(
    "command",
    ["git -C {base}/ws_evil init", "git -C ../ws_evil status", "git --git-dir={base}/x/.git log",
     "git --work-tree=/ checkout .", "git init {base}/ws_evil/repo",
     "git clone https://example.org/r.git {base}/clone", "git worktree add ../wt",
     "git -C sub log --output=../../escape",
     "git clone file://{base}/ws_evil y", "git fetch file://{base}/ws_evil",
     "git pull file://{base}/ws_evil main", "git remote add o file://{base}/ws_evil",
     "git clone file://{base}/ws%5Fevil y"],
)  # fmt: skip
def test_git_working_outside_the_workspace_is_refused(audit, command: str):
    policy, base = audit
    decision = _action(policy, command.format(base=base))
    assert decision.action == "deny" and decision.scope == "capability", decision
    assert _action(policy, "git -C sub status").action == "allow"
    assert _action(policy, f"git fetch file://localhost{base}/ws/sub").action == "allow"


@pytest.mark.parametrize(
    "command",
    [
        'git config alias.x "!touch /tmp/pwnA"',
        "git config core.sshCommand 'sh -c id'",
        "git config core.pager 'sh -c id'",
        "git config core.editor vim",
        "git config core.hooksPath .hooks",
        "git config --global user.name x",
        "git config --system --list",
        "git config set core.fsmonitor ./x",
        "git config --add filter.x.clean id",
        "git config -e",
        "git -c core.pager=id log",
        "git --config-env=core.pager=X log",
        "git fetch --upload-pack=id origin",
        "git clone -u id origin",
        "git push --receive-pack=id origin",
        "git archive --exec=id --remote=origin HEAD",
        "git difftool -x id",
        "git difftool",
        "git mergetool",
        "git bisect run ./x",
        "git rebase --exec id main",
        "git rebase -x id main",
        "git submodule foreach id",
        "git submodule --quiet foreach id",
        "git filter-branch --tree-filter id",
        "git send-email --sendmail-cmd=id x.patch",
        "git hook run pre-commit",
        "git clone ext::sh",
        "git grep -O id x",
        "git init --template=tpl",
    ],
)
def test_git_options_that_run_programs_ask_under_a_prefix_allow(audit, command: str):
    policy, _ = audit
    decision = _action(policy, command)
    assert decision.action == "ask" and decision.scope == "shell", decision


def test_git_reads_of_its_own_config_stay_allowed(audit):
    policy, _ = audit
    for command in ("git config user.name", "git config --get core.pager", "git config -l",
                    "git config get user.email", "git status",
                    "git log -n 3 --oneline"):  # fmt: skip
        assert _action(policy, command).action == "allow", command


@pytest.mark.parametrize(
    ("command", "permission"),
    [
        ("cat /dev/fd/../../..{base}/outside.txt", "fs.read"),  # /dev/fd is /proc/self/fd
        ("cat /dev/fd/0/../../../..{base}/outside.txt", "fs.read"),
        ("echo pwn > /dev/fd/../../..{base}/planted", "fs.write"),
        ("cat notes.txt < /dev/fd/../../..{base}/outside.txt", "fs.read"),
        ("echo pwn >> /dev/fd/1/../../../..{base}/planted", "fs.write"),
    ],
)
def test_a_path_through_dev_fd_is_a_path_like_any_other(audit, command: str, permission: str):
    """Only a descriptor itself (``/dev/fd/3``) names no file: ``/dev/fd/../../..`` climbs
    from /proc/self/fd to the root, so what follows is checked like any path."""
    policy, base = audit
    decision = _action(policy, command.format(base=base))
    assert decision.action == "deny" and decision.scope == "capability", decision
    assert permission in decision.rule
    for command in ("cat notes.txt /dev/fd/0", "echo x > /dev/fd/2", "cat < /dev/fd/3"):
        assert _action(policy, command).action != "deny", command


@pytest.mark.parametrize(
    "command",
    [
        "cat /proc/self/cwd/../notes.txt",
        "cat /proc/thread-self/cwd/../notes.txt",
        "cat /dev/fd/../cwd/../notes.txt",  # /dev/fd is /proc/self/fd
        "cat proclink/../notes.txt",  # a link in the workspace to /proc/self/cwd
        "echo x > /proc/self/cwd/../notes.txt",
        "cd /proc/self/cwd && cat ../notes.txt",
    ],
)
def test_a_path_through_proc_self_asks_because_it_names_the_process_that_opens_it(
    audit, monkeypatch: pytest.MonkeyPatch, command: str
):
    """The check resolves /proc/self in the server, bash in itself: with the server started
    in ws/sub, ``/proc/self/cwd/../notes.txt`` was ws/notes.txt to the check and the file
    beside the workspace to bash (which runs in ws)."""
    _, base = audit
    policy = _policy(base, AUDIT_RULES + ALLOW_ALL_BASH)
    (base / "notes.txt").write_text("beside the workspace\n")
    (base / "ws" / "proclink").symlink_to("/proc/self/cwd")
    monkeypatch.chdir(base / "ws" / "sub")
    decision = _action(policy, command)
    assert decision.action == "ask", decision
    assert "goes through /proc/self, which names the process" in decision.rule, decision
    assert _action(policy, "cat notes.txt sub/../notes.txt").action == "allow"


def test_path_operands_are_checked_like_path_arguments(audit):
    policy, base = audit
    refused = {
        f"cat {base}/outside.txt": "fs.read",
        "cat ../ws_evil/s.txt": "fs.read",
        "cat dirlink/s.txt": "fs.read",
        "cat notes.txt dirlink/s.txt": "fs.read",
        "cat */s.txt": "fs.read",  # the glob matches dirlink/s.txt
        "cat -- ../outside.txt": "fs.read",
        "head -n 3 ../outside.txt": "fs.read",
        "grep -r needle ..": "fs.read",
        f"grep -e {base}/outside.txt -f ../outside.txt notes.txt": "fs.read",
        f"sort -o {base}/x notes.txt": "fs.write",
        "sort --outp=../x notes.txt": "fs.write",
        "cp notes.txt ../copied": "fs.write",
        "cp -t .. notes.txt": "fs.write",
        "rm dirlink/s.txt": "fs.write",
        "echo x && cat ../outside.txt": "fs.read",
        "xargs -a ../outside.txt echo": "fs.read",
        "git log --outp=../pwn": "fs.write",
    }
    for command, capability in refused.items():
        decision = _action(policy, command)
        assert decision.action == "deny" and decision.scope == "capability", (command, decision)
        assert capability in decision.rule, (command, decision)


def test_operands_inside_the_workspace_follow_the_command_rule(audit):
    policy, _ = audit
    for command in ("cat notes.txt", "cat 'sub/../notes.txt'", "cat *.txt",
                    "head -n 3 notes.txt", "grep -e ../x -r needle sub",
                    "grep -rn /etc/passwd .", "sort -o out.txt notes.txt",
                    "cp notes.txt sub/", "rm dirlink", "find . -name '*.py'"):  # fmt: skip
        assert _action(policy, command).action == "allow", command


def test_an_fs_read_deny_rule_binds_bash_operands(audit):
    policy, base = audit
    for command in ("cat secrets/key.env", "cat sub/../secrets/key.env", "cat secrets/*",
                    "head -c 10 secrets/key.env", "grep TOKEN secrets/key.env",
                    "git show HEAD:secrets/key.env", "git log -p -- secrets/key.env"):  # fmt: skip
        decision = _action(policy, command)
        assert decision.action == "deny", (command, decision)
        assert "secrets/**" in decision.rule, (command, decision)
    (base / "ws" / "innocent").symlink_to(base / "ws" / "secrets")
    assert _action(policy, "cat innocent/key.env").action == "deny"


def test_cd_is_followed_for_the_paths_after_it(audit):
    policy, base = audit
    assert _action(policy, "cd sub && cat ../notes.txt").action == "allow"
    assert _action(policy, "cd sub && echo x > out.txt").action == "ask"  # a redirect: default
    for command in ("cd .. && cat ws_evil/s.txt", "cd sub && cat ../../outside.txt",
                    "cd sub; cat ../../outside.txt", "cd dirlink && cat s.txt",
                    f"cd {base} && cat outside.txt", "cd sub && echo x > ../../escape",
                    "cd sub || cat ../outside.txt",
                    "bash -c 'cd sub && cat ../../outside.txt'"):  # fmt: skip
        decision = _action(policy, command)
        assert decision.action == "deny" and decision.scope == "capability", (command, decision)
    # a subshell's cd does not carry over, and cd through a symlink is followed both ways
    assert _action(policy, "(cd sub && cat x); cat notes.txt").action == "allow"
    assert _action(policy, "cd dirlink/.. && cat notes.txt").action == "deny"


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        ("cat ~/.ssh/id_rsa", "depends on HOME"),
        ("cd && cat .bashrc", "goes to HOME"),
        ("cd - && cat x", "cannot be followed"),
        ("find . -name '*.txt' | xargs cat", "xargs gives cat file names"),
        ("for d in a b; do cd sub; done; cat x", "loop changes directory"),
        ("grep -R needle .", "follows symbolic links"),
        ("cp hook.sh .git/hooks/pre-commit", "inside .git"),
        ("echo '[alias]' >> .git/config", "inside .git"),
        ("echo pwn >&.git/hooks/pre-commit", "inside .git"),
        ("cat x <> .git/hooks/post-checkout", "inside .git"),
    ],
)
def test_paths_that_cannot_be_followed_ask(audit, command: str, fragment: str):
    _, base = audit
    policy = _policy(base, AUDIT_RULES + ALLOW_ALL_BASH)
    (base / "ws" / ".git" / "hooks").mkdir(parents=True)
    decision = _action(policy, command)
    assert decision.action == "ask", decision
    assert fragment in decision.rule, decision


def test_an_always_answer_covers_a_path_reason_for_that_text_only(audit):
    _, base = audit
    policy = _policy(base, AUDIT_RULES + ALLOW_ALL_BASH)
    session = SessionRules()
    command = "cp hook.sh .git/hooks/pre-commit"
    decision = _gate(policy, command, session)
    assert decision.action == "ask" and "inside .git" in decision.rule
    arguments = {"command": command}
    targets = policy.targets(BASH, arguments, roles=BASH.argument_roles, splitter=splitter)
    session.add_always(BASH, shell_targets(policy, BASH, arguments, targets))
    assert _gate(policy, command, session).action == "allow"
    assert _gate(policy, "cp x.sh .git/hooks/pre-push", session).action == "ask"


def test_rm_of_a_symlink_removes_the_link_not_its_target(audit):
    policy, base = audit
    arguments = {"command": "rm dirlink"}
    targets = policy.targets(BASH, arguments, roles=BASH.argument_roles, splitter=splitter)
    targets = shell_targets(policy, BASH, arguments, targets)
    assert targets.paths_write == (base / "ws" / "dirlink",)
    assert ("fs.write", base / "ws" / "dirlink") in targets.operand_paths


async def test_the_real_gate_refuses_the_audited_bypasses_headless(audit):
    policy, base = audit
    gate = PolicyGate(policy)
    context = CallContext(session_id="audit")
    for command in (f"git log --output={base}/x/pwn", f"git -C {base}/ws_evil init",
                    'git config alias.x "!touch /tmp/pwnA"', "cat ../ws_evil/s.txt",
                    "cat dirlink/s.txt", f"cat {base}/outside.txt",
                    "cat secrets/key.env"):  # fmt: skip
        clearance = await gate(BASH, {"command": command}, context)
        assert not clearance.allowed, command
        assert clearance.refusal(), command
    assert (await gate(BASH, {"command": "cat notes.txt"}, context)).allowed


@pytest.mark.parametrize(
    "command",
    [
        "mv dirlink y && cat y/s.txt",
        "mv dirlink y; cd y && cat s.txt",
        "cp -a sub y && cat y/l/s.txt",
        "tar -xf a.tar && cat l/s.txt",
        "tar -xf a.tar -C sub && cat sub/l/s.txt",
        "git checkout evil && cat notes.txt",
        "git clone https://example.org/r.git && cat r/l/s.txt",
        "mv dirlink y && echo x > y/new",
    ],
)
def test_a_path_through_a_place_the_same_line_may_make_a_symlink_asks(audit, command: str):
    """Checked before the line runs, such a path would be judged on what is there now."""
    _, base = audit
    policy = _policy(base, AUDIT_RULES + ALLOW_ALL_BASH)
    decision = _action(policy, command)
    assert decision.action == "ask", decision
    assert "symbolic link" in decision.rule, decision


def test_links_are_checked_where_they_resolve_and_git_pathspecs_do_not_follow(audit):
    policy, _ = audit
    # ../x from sub is inside, but the link lands in the workspace root, where ../x is not
    relative = _policy(audit[1], AUDIT_RULES + ALLOW_ALL_BASH)
    assert _action(relative, "cd sub && ln -s ../x ../l").scope == "capability"
    assert _action(relative, "ln -s notes.txt sub/l").action == "allow"
    assert _action(policy, "git checkout -b f && git add . && git commit -m x").action == "allow"
    assert _action(policy, "git stash && git pull && git stash pop").action == "allow"


def test_a_command_allowed_over_the_default_is_not_asked_again_for_its_operands(tmp_path: Path):
    """Layered over the default policy, the default's bash ask is the tool's blanket rule: the
    command's own subject met it already, so the files a command names are decided by the
    rules about paths alone (the default's .env ask among them)."""
    policy = _policy(tmp_path, 'allow = ["bash=git *"]\n')
    (tmp_path / "ws" / "src").mkdir()
    assert _gate(policy, "git add src/a.py").action == "allow"
    assert _gate(policy, "git log -- src").action == "allow"
    assert _gate(policy, "git add .env").action == "ask"
    assert _gate(policy, "ls src").action == "ask"
