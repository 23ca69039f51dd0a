"""The permission layer's rules: the policy file and its built-in default, capability
requirements and the call-time scope check, permission rules and their order, path
containment, the watchdog hook, and ``shell/`` (the bash sub-policy).

May import: the vocabulary only."""

from typing import TYPE_CHECKING

from mcp_toolbridge.lazy import on_first_use

if TYPE_CHECKING:
    from mcp_toolbridge.policy.compiled import Decision, Policy, combine
    from mcp_toolbridge.policy.file import PolicyFile, SandboxMode
    from mcp_toolbridge.policy.grants import SessionRules, always_grants
    from mcp_toolbridge.policy.hints import capability_way_out, way_out
    from mcp_toolbridge.policy.paths import (
        canonical_root,
        canonicalize,
        check_text,
        escape_glob,
        glob_literal,
        glob_pattern,
        glob_regex,
        has_control,
        has_glob,
        is_within,
        split_glob,
    )
    from mcp_toolbridge.policy.requirements import (
        CommandSplitter,
        HostPattern,
        Scope,
        Targets,
        host_of,
        normalize_host,
    )
    from mcp_toolbridge.policy.rules import (
        ACTION_RANK,
        Action,
        Subject,
        Who,
        is_manifest_path,
        resolve,
    )
    from mcp_toolbridge.policy.shell.hooks import shell_denial, shell_floor, shell_targets
    from mcp_toolbridge.policy.shell.parse import load_parser, parser_loaded, splitter
    from mcp_toolbridge.policy.show import render_policy
    from mcp_toolbridge.policy.watchdog import (
        Verdict,
        WatchdogRequest,
        failure,
        hidden_from_it,
        named_files,
        parse_verdict,
        watchdog_payload,
    )

__getattr__ = on_first_use(
    __name__,
    {
        "mcp_toolbridge.policy.compiled": (
            "Decision",
            "Policy",
            "combine",
        ),
        "mcp_toolbridge.policy.file": (
            "PolicyFile",
            "SandboxMode",
        ),
        "mcp_toolbridge.policy.grants": (
            "SessionRules",
            "always_grants",
        ),
        "mcp_toolbridge.policy.hints": (
            "capability_way_out",
            "way_out",
        ),
        "mcp_toolbridge.policy.paths": (
            "canonical_root",
            "canonicalize",
            "check_text",
            "escape_glob",
            "glob_literal",
            "glob_pattern",
            "glob_regex",
            "has_control",
            "has_glob",
            "is_within",
            "split_glob",
        ),
        "mcp_toolbridge.policy.requirements": (
            "CommandSplitter",
            "HostPattern",
            "Scope",
            "Targets",
            "host_of",
            "normalize_host",
        ),
        "mcp_toolbridge.policy.rules": (
            "ACTION_RANK",
            "Action",
            "Subject",
            "Who",
            "is_manifest_path",
            "resolve",
        ),
        "mcp_toolbridge.policy.show": ("render_policy",),
        "mcp_toolbridge.policy.watchdog": (
            "Verdict",
            "WatchdogRequest",
            "failure",
            "hidden_from_it",
            "named_files",
            "parse_verdict",
            "watchdog_payload",
        ),
        # the bash sub-policy (``shell/``, about 10 ms of a start), which only a call needs; a
        # server loads it in a worker thread once it has answered its first tools/list
        # (cli.startup.warm_up)
        "mcp_toolbridge.policy.shell.hooks": ("shell_denial", "shell_floor", "shell_targets"),
        "mcp_toolbridge.policy.shell.parse": ("load_parser", "parser_loaded", "splitter"),
    },
)

__all__ = [
    "ACTION_RANK",
    "Action",
    "CommandSplitter",
    "Decision",
    "HostPattern",
    "Policy",
    "PolicyFile",
    "SandboxMode",
    "Scope",
    "SessionRules",
    "Subject",
    "Targets",
    "Verdict",
    "WatchdogRequest",
    "Who",
    "always_grants",
    "canonical_root",
    "canonicalize",
    "capability_way_out",
    "check_text",
    "combine",
    "escape_glob",
    "failure",
    "glob_literal",
    "glob_pattern",
    "glob_regex",
    "has_control",
    "has_glob",
    "hidden_from_it",
    "host_of",
    "is_manifest_path",
    "is_within",
    "load_parser",
    "named_files",
    "normalize_host",
    "parse_verdict",
    "parser_loaded",
    "render_policy",
    "resolve",
    "shell_denial",
    "shell_floor",
    "shell_targets",
    "split_glob",
    "splitter",
    "watchdog_payload",
    "way_out",
]
