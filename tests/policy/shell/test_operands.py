"""Which arguments of known file commands are paths (read, written or removed), and which are
option values, patterns or scripts that must not be mistaken for paths."""

from __future__ import annotations

import shlex

import pytest

from mcp_toolbridge.policy.shell.operands import KNOWN_PROGRAMS, path_operands
from mcp_toolbridge.policy.shell.parse import parse_command


def _paths(command: str) -> list[tuple[str, str]]:
    found = path_operands(tuple(shlex.split(command)))
    assert not found.reasons, found.reasons
    return sorted({(p.text, p.access) for p in found.paths})


R, W, X = "read", "write", "remove"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat a b", [("a", R), ("b", R)]),
        ("cat - a", [("a", R)]),
        ("cat -- -n", [("-n", R)]),
        ("head -n 5 f", [("f", R)]),
        ("head -c5 f", [("f", R)]),
        ("tail --lines 3 f", [("f", R)]),
        ("less -o log.txt +G f", [("f", R), ("log.txt", W)]),
        ("wc -l a", [("a", R)]),
        ("ls", [(".", R)]),
        ("ls -la -I '*.o' d", [("d", R)]),
        ("du -sh", [(".", R)]),
        ("grep needle a b", [("a", R), ("b", R)]),
        ("grep -rn needle", [(".", R)]),
        ("grep -e /etc/passwd -A 3 f", [("f", R)]),
        ("grep -f pats.txt f", [("f", R), ("pats.txt", R)]),
        ("grep --include '*.py' -r needle src", [("src", R)]),
        ("rg needle", [(".", R)]),
        ("rg -g '*.py' -t py needle src", [("src", R)]),
        ("rg --files src", [("src", R)]),
        ("rg --ignore-file ig.txt needle", [(".", R), ("ig.txt", R)]),
        ("sed -n '1,5p' f", [("f", R)]),
        ("sed -e p -e d f g", [("f", R), ("g", R)]),
        ("sed -i.bak s/a/b/ f", [("f", W)]),
        ("awk -F: -v x=1 '{print $1}' f y=2", [("f", R)]),
        ("gawk -o/tmp/x 1 f", [("/tmp/x", W), ("f", R)]),
        ("sort -o out.txt -k 2 in.txt", [("in.txt", R), ("out.txt", W)]),
        ("sort --output=/tmp/o in", [("/tmp/o", W), ("in", R)]),
        ("sort --outp=/tmp/o in", [("/tmp/o", W), ("in", R)]),
        ("sort --o=.git/config in", [(".git/config", W), ("in", R)]),  # GNU sort: --output
        ("cp --t=.git/hooks pre-commit", [(".git/hooks", W), ("pre-commit", R)]),
        ("chmod --r=/etc/shadow f", [("/etc/shadow", R), ("f", W)]),
        ("touch --r=/etc/shadow f", [("/etc/shadow", R), ("f", W)]),
        ("grep --fil=/etc/shadow f", [("/etc/shadow", R)]),  # f: the pattern, to be safe
        ("git format-patch --o=/tmp/x HEAD~1", [("/tmp/x", W), ("HEAD~1", R)]),
        ("tar --dir=.git/hooks -xf a.tar", [(".git/hooks", W), ("a.tar", R)]),
        ("tar --fil=/tmp/a.tar -c f", [("/tmp/a.tar", W), ("f", R)]),
        ("uniq in out", [("in", R), ("out", W)]),
        ("split -l 10 in out_", [("in", R), ("out_", W)]),
        ("split -a 1 --additional-suffix=ig in .git/con", [(".git/con", W), ("in", R)]),
        ("diff -U 3 a b", [("a", R), ("b", R)]),
        ("diff --from-file=base a b", [("a", R), ("b", R), ("base", R)]),
        ("stat -c %s f", [("f", R)]),
        ("file -m magic f", [("f", R), ("magic", R)]),
        ("cut -d , -f 2 f", [("f", R)]),
        ("rm -rf build dist", [("build", X), ("dist", X)]),
        ("mkdir -p -m 700 a/b", [("a/b", W)]),
        ("touch -d yesterday -r ref new", [("new", W), ("ref", R)]),
        ("tee -a log1 log2", [("log1", W), ("log2", W)]),
        ("chmod 755 a b", [("a", W), ("b", W)]),
        ("chmod -x f", [("f", W)]),
        ("chmod u+x,go-w f", [("f", W)]),
        ("chmod --reference=ref f", [("f", W), ("ref", R)]),
        ("chown -R user:group d", [("d", W)]),
        ("cp -r a b dest", [("a", R), ("b", R), ("dest", W)]),
        ("cp -t dest a", [("a", R), ("dest", W)]),
        ("cp --target-directory=dest a", [("a", R), ("dest", W)]),
        ("mv a b", [("a", X), ("b", W)]),
        ("ln -s target link", [("link", W), ("target", R), ("link/target", R)]),
        ("ln -s ../x sub/l", [("sub/l", W), ("../x", R), ("sub/../x", R), ("sub/l/../x", R)]),
        ("ln -s /abs/target", [("/abs/target", R), ("target", W)]),
        ("install -m 644 a /usr/local/a", [("/usr/local/a", W), ("a", R)]),
        ("install -d d1 d2", [("d1", W), ("d2", W)]),
        ("find src -name '*.py'", [("src", R)]),
        ("find -L . -newer stamp", [(".", R), ("stamp", R)]),
        ("find . -newermt 2020-01-01", [(".", R)]),
        ("find build -delete", [("build", W)]),
        ("dd if=in.img of=out.img bs=1M", [("in.img", R), ("out.img", W)]),
        ("tar -czf out.tgz src docs", [("docs", R), ("out.tgz", W), ("src", R)]),
        ("tar xzf in.tgz", [(".", W), ("in.tgz", R)]),
        ("tar -xf in.tar -C out", [("in.tar", R), ("out", W)]),
        ("tar --extract --file=in.tar --directory=out", [("in.tar", R), ("out", W)]),
        ("tar -C /tmp -cf a.tar x", [("/tmp", R), ("/tmp/x", R), ("a.tar", W)]),
        ("tar -tf a.tar", [("a.tar", R)]),
        ("git status", []),
        ("git log --output=/tmp/x/pwn", [("/tmp/x/pwn", W)]),
        ("git diff --output ../pwn", [("../pwn", W)]),
        ("git -C /tmp/x/ws_evil init", [("/tmp/x/ws_evil", W)]),
        ("git -C sub log --output=out", [("sub", W), ("sub/out", W)]),
        ("git --git-dir=/x/.git --work-tree=/x status", [("/x", W), ("/x/.git", W)]),
        ("git init repo", [("repo", W)]),
        ("git clone https://example.org/r.git", [("r", W)]),
        ("git clone ../local dest", [("../local", R), ("dest", W)]),
        ("git worktree add ../wt main", [("../wt", W), ("main", R)]),
        ("git bundle create /tmp/b.bundle HEAD", [("/tmp/b.bundle", W), ("HEAD", R)]),
        ("git format-patch -o /tmp/p HEAD~1", [("/tmp/p", W), ("HEAD~1", R)]),
        ("git archive -o out.zip HEAD", [("HEAD", R), ("out.zip", W)]),
        ("git show HEAD:secrets/key.env", [("secrets/key.env", R)]),
        ("git log -p -- secrets/key.env", [("secrets/key.env", R)]),
        ("git commit -m '/etc/passwd' -F msg.txt", [("msg.txt", R)]),
        ("git commit -am '../x'", []),
        ("git checkout-index --prefix=/tmp/x/ -a", [("/tmp/x/", W), (".", W)]),
        ("git checkout main -- src", [(".", W), ("main", R), ("src", R)]),
        ("make -C sub -f Makefile.ci all VAR=1", [("Makefile.ci", R), ("sub", R)]),
        ("xxd -c 16 in out", [("in", R), ("out", W)]),
        ("echo /etc/passwd", []),
    ],
)
def test_path_operands(command: str, expected: list[tuple[str, str]]):
    assert _paths(command) == sorted(expected)


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        ("wc --files0-from=list", "--files0-from"),
        ("du --files0-from list", "--files0-from"),
        ("sort --files0-from=list", "--files0-from"),
        ("sort --files0=list", "--files0"),
        ("tar -cf a.tar --files-f=list", "tar -T"),
        ("tar -cf a.tar -T list", "tar -T"),
        ("tar -xf host:a.tar", "remote archive"),
        ("find . -files0-from list", "-files0-from"),
        ("file -f names.txt", "-f reads file names"),
    ],
)
def test_options_that_read_file_names_from_a_file_are_uncheckable(command: str, fragment: str):
    found = path_operands(tuple(shlex.split(command)))
    assert any(fragment in reason for reason in found.reasons), found.reasons


def test_the_table_covers_the_commands_opencode_checks_and_more():
    opencode = {"cd", "rm", "cp", "mv", "mkdir", "touch", "chmod", "chown", "cat"}
    assert opencode - {"cd"} <= KNOWN_PROGRAMS  # cd is followed by the parser itself
    more = {"head", "tail", "grep", "rg", "sed", "awk", "find", "tar", "dd", "git", "tee", "ln",
            "diff", "stat", "file", "ls", "less", "wc", "rmdir"}  # fmt: skip
    assert more <= KNOWN_PROGRAMS


def test_globs_tildes_and_xargs_are_seen_through_the_shells_quoting():
    paths = parse_command("cat *.txt 'lit*' \"a\"?b").paths
    assert [(p.text, p.pattern) for p in paths] == [
        ("*.txt", "*.txt"),
        ("lit*", None),
        ("a?b", "a?b"),
    ]
    assert parse_command("cat 'a'\\*'b'").paths[0].pattern is None
    assert "depends on HOME" in parse_command("cat ~/x").uncheckable[0]
    assert "depends on HOME" in parse_command("dd of=~/x").uncheckable[0]
    assert "pattern" in parse_command("sort --output=out* f").uncheckable[0]
    assert parse_command("sort -o out* f").paths[0].pattern == "out*"
    assert "xargs gives cat" in parse_command("ls | xargs cat").uncheckable[0]
    assert parse_command("cat ''").paths == ()


def test_wrappers_and_nested_shells_keep_the_operands():
    for command in ("timeout 5 cat /x", "env A=1 nice -n 3 cat /x", "bash -c 'cat /x'",
                    "command cat /x", "cat a | sort; cat /x"):  # fmt: skip
        texts = [p.text for p in parse_command(command).paths]
        assert "/x" in texts, command


def test_writes_that_may_leave_symlinks_are_marked():
    def links(command: str) -> dict[str, str | None]:
        return {p.text: p.links for p in path_operands(tuple(shlex.split(command))).paths}

    assert links("mv a b") == {"a": None, "b": "at"}
    assert links("cp -a a b")["b"] == "at"
    assert links("cp a b")["b"] is None
    assert links("ln -s t l")["l"] == "at"
    assert links("tar -xf a.tar -C out")["out"] == "under"
    assert links("git checkout main")["."] == "under"
    assert links("git clone https://example.org/r.git")["r"] == "under"


def test_cd_is_tracked_through_lists_and_undone_by_subshells():
    def cwds(command: str) -> dict[str, list[tuple[str, ...]]]:
        return {p.text: sorted(p.cwds) for p in parse_command(command).paths}

    assert cwds("cd a && cat x") == {"x": [("a",)]}
    assert cwds("cd a; cat x") == {"x": [(), ("a",)]}
    assert cwds("cd a || cat x") == {"x": [()]}
    assert cwds("cd a && cd b && cat x") == {"x": [("a", "b")]}
    assert cwds("(cd a && cat x); cat y") == {"x": [("a",)], "y": [()]}
    assert cwds("cd a | cat x") == {"x": [()]}
    assert cwds("echo $(cd a) > /dev/null; cat y") == {"y": [()]}
    assert cwds("cd a && make > log") == {"log": [("a",)]}
    assert cwds("cd a > out") == {"out": [()]}
    assert cwds("pushd a && popd && cat x") == {"x": [(), ("a",)]}
    assert parse_command("cd a && cd b").directories == (("a",), ("a", "b"))
