from __future__ import annotations

from pathlib import Path

import pytest

from mcp_toolbridge.errors import ArgumentsError, ErrorCode
from mcp_toolbridge.model import PrefixArg, RequirementSet, ShellRequirement, WildcardArg
from mcp_toolbridge.policy.paths import PathRejectedError, canonical_root
from mcp_toolbridge.policy.requirements import (
    Targets,
    VariableError,
    Variables,
    argument_targets,
    check_scope,
    compile_requirements,
    expand,
    shell_matches,
    split_command,
)
from tests.support.policy_fixtures import builtin, http_tool


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = canonical_root(tmp_path) / "ws"
    (workspace / "src").mkdir(parents=True)
    return workspace


def variables(ws: Path, *, ad_hoc: tuple[Path, ...] = ()) -> Variables:
    return Variables.of(workspace=ws, user_data=ws.parent / "data", ad_hoc=ad_hoc)


def test_variables_expand_to_each_of_their_values(ws):
    extra = (ws.parent / "a", ws.parent / "b")
    assert expand("{workspace}/src", variables(ws)) == (f"{ws}/src",)
    assert expand("{ad-hoc}/x", variables(ws, ad_hoc=extra)) == (f"{extra[0]}/x", f"{extra[1]}/x")
    assert expand("{user-data}", variables(ws)) == (str(ws.parent / "data"),)
    assert expand("awk '{{print}}'", variables(ws)) == ("awk '{print}'",)


def test_an_undefined_variable_is_a_compile_error_naming_the_key(ws):
    with pytest.raises(VariableError, match=r"unknown variable \{worksapce\}"):
        expand("{worksapce}/x", variables(ws))
    with pytest.raises(ValueError, match=r"fs\.read\[1\]: unknown variable \{home\}"):
        compile_requirements(RequirementSet(fs_read=("{workspace}", "{home}/x")), variables(ws))


def test_an_empty_expansion_gives_an_empty_scope_and_calls_fail_closed(ws):
    scope = compile_requirements(RequirementSet(fs_read=("{ad-hoc}",)), variables(ws))
    assert scope.fs_read == ()
    denial = check_scope(scope, Targets(paths_read=(ws / "src" / "a.py",)))
    assert denial is not None
    assert denial.capability == "fs.read"
    assert "{ad-hoc} expanded to nothing" in denial.message


def test_no_workspace_means_relative_patterns_grant_nothing(ws):
    empty = Variables.of(workspace=None, user_data=None)
    scope = compile_requirements(RequirementSet(fs_read=("src/**", "{workspace}")), empty)
    assert scope.fs_read == ()
    assert check_scope(scope, Targets(paths_read=(ws / "src" / "x",))) is not None


def test_a_literal_directory_grants_itself_and_everything_below_but_not_a_prefix_sibling(ws):
    scope = compile_requirements(RequirementSet(fs_read=("{workspace}",)), variables(ws))
    assert check_scope(scope, Targets(paths_read=(ws,))) is None
    assert check_scope(scope, Targets(paths_read=(ws / "src" / "deep" / "f",))) is None
    sibling = Path(str(ws) + "_evil") / "f"
    denial = check_scope(scope, Targets(paths_read=(sibling,)))
    assert denial is not None and "outside the granted fs.read scope" in denial.message


def test_glob_and_relative_patterns_are_rooted_at_the_workspace(ws):
    scope = compile_requirements(RequirementSet(fs_write=("src/**/*.py",)), variables(ws))
    assert check_scope(scope, Targets(paths_write=(ws / "src" / "a" / "b.py",))) is None
    assert check_scope(scope, Targets(paths_write=(ws / "src" / "b.txt",))) is not None
    assert check_scope(scope, Targets(paths_read=(ws / "src" / "b.py",))) is not None


def test_write_scope_does_not_grant_reads(ws):
    scope = compile_requirements(RequirementSet(fs_write=("{workspace}",)), variables(ws))
    denial = check_scope(scope, Targets(paths_read=(ws / "f",)))
    assert denial is not None and denial.capability == "fs.read"


def test_host_patterns_match_exact_hosts_subdomains_and_everything():
    scope = compile_requirements(
        RequirementSet(net_hosts=("API.Example.com.", "*.docs.io")), Variables()
    )
    assert check_scope(scope, Targets(hosts=("api.example.com",))) is None
    assert check_scope(scope, Targets(hosts=("a.b.docs.io",))) is None
    assert check_scope(scope, Targets(hosts=("docs.io",))) is not None
    assert check_scope(scope, Targets(hosts=("evildocs.io",))) is not None
    anything = compile_requirements(RequirementSet(net_hosts=("*",)), Variables())
    assert check_scope(anything, Targets(hosts=("x.y",))) is None


def test_runloop_net_capabilities_map_onto_net_hosts():
    scope = compile_requirements(
        RequirementSet(capabilities=("net:api.mail.example", "mail.send")), Variables()
    )
    assert [h.source for h in scope.hosts] == ["api.mail.example"]
    assert scope.capabilities == {"net.fetch", "mail.send"}
    assert check_scope(scope, Targets(hosts=("api.mail.example",))) is None
    assert check_scope(scope, Targets(hosts=("api.mail.example.evil",))) is not None


def test_invalid_host_patterns_are_refused():
    with pytest.raises(ValueError, match=r"net\.hosts\[0\]"):
        compile_requirements(RequirementSet(net_hosts=("http://x/y",)), Variables())


def test_shell_entries_match_exact_wildcard_and_prefix_arguments():
    git = ShellRequirement(cmd="git", args=("log", WildcardArg(), PrefixArg(prefix="--format=")))
    assert shell_matches(git, ["git", "log", "-n5", "--format=%H"])
    assert not shell_matches(git, ["git", "log", "-n5"])
    assert not shell_matches(git, ["git", "push", "-n5", "--format=%H"])
    assert not shell_matches(git, ["/tmp/evil/git", "log", "-n5", "--format=%H"])
    assert shell_matches(ShellRequirement(cmd="ls"), ["ls", "-la", "/"])


def test_commands_need_shell_run_or_a_matching_shell_entry():
    none = compile_requirements(RequirementSet(), Variables())
    denial = check_scope(none, Targets(commands=(("ls",),)))
    assert denial is not None and denial.capability == "shell.run"
    anything = compile_requirements(RequirementSet(capabilities=("shell.run",)), Variables())
    assert check_scope(anything, Targets(commands=(("rm", "-rf", "x"),))) is None
    only_git = compile_requirements(
        RequirementSet(capabilities=("shell.run",), shell=(ShellRequirement(cmd="git"),)),
        Variables(),
    )
    assert check_scope(only_git, Targets(commands=(("git", "status"),))) is None
    denial = check_scope(only_git, Targets(commands=(("curl", "x"),)))
    assert denial is not None and "matches no granted shell entry" in denial.message


def test_the_default_splitter_keeps_any_shell_syntax_as_one_bash_invocation():
    assert split_command("git log --oneline -n 5") == (("git", "log", "--oneline", "-n", "5"),)
    assert split_command("git commit -m 'a b'") == (("git", "commit", "-m", "a b"),)
    for complex_command in ("ls; rm -rf /", "cat $(x)", "echo `id`", "a | b", "x > f", "a\nb"):
        assert split_command(complex_command) == (("bash", "-c", complex_command),)
    with pytest.raises(ArgumentsError, match="empty"):
        split_command("   ")
    with pytest.raises(PathRejectedError):
        split_command("ls\rrm -rf /")


def test_argument_targets_follow_the_role_map_and_canonicalize_paths(ws):
    (ws / "link").symlink_to(ws.parent, target_is_directory=True)
    spec = builtin("edit")
    targets = argument_targets(
        spec,
        {"file_path": "link/x.txt", "url": "https://User@Docs.Example.com:8443/a", "cmd": "ls -l"},
        base=ws,
        roles={"file_path": ("fs.read", "fs.write"), "url": "net.fetch", "cmd": "shell.run"},
    )
    assert targets.paths_read == (ws.parent / "x.txt",)
    assert targets.paths_write == (ws.parent / "x.txt",)
    assert targets.hosts == ("docs.example.com",)
    assert targets.commands == (("ls", "-l"),)


def test_argument_targets_skip_missing_arguments_and_refuse_bad_values(ws):
    spec = builtin("read")
    assert argument_targets(spec, {}, base=ws, roles={"file_path": "fs.read"}).is_empty()
    with pytest.raises(ArgumentsError) as info:
        argument_targets(spec, {"file_path": 3}, base=ws, roles={"file_path": "fs.read"})
    assert info.value.code == ErrorCode.ARGS_INVALID
    with pytest.raises(ArgumentsError, match="no host"):
        argument_targets(spec, {"url": "/relative"}, base=ws, roles={"url": "net.fetch"})
    with pytest.raises(PathRejectedError):
        argument_targets(spec, {"url": "http://a\x00.b.com/"}, base=ws, roles={"url": "net.fetch"})


def test_an_http_tool_targets_its_url_host_with_the_template_filled(ws):
    static = http_tool("mail_send", "https://api.mail.example/send/{id}")
    assert argument_targets(static, {"id": "7"}, base=ws).hosts == ("api.mail.example",)
    templated = http_tool("get", "https://{region}.api.example/x")
    assert argument_targets(templated, {"region": "eu"}, base=ws).hosts == ("eu.api.example",)
