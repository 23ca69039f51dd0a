"""sed: the options and scripts that make it run commands or write files (used by
:mod:`mcp_toolbridge.policy.shell.flags`). A script is read command by command, so an ``e``
or ``w`` hidden behind an address, a label or another command is found."""

from __future__ import annotations

from mcp_toolbridge.policy.shell.argv import long_option


def sed_check(argv: tuple[str, ...]) -> str | None:
    """Why a sed command line can run commands or write files: ``-i``/``--in-place``, a
    script read from a file, or a script with ``e``, ``w``, ``W``, ``s///e`` or ``s///w``
    (long options written out or abbreviated); None when it only edits the stream."""
    args = argv[1:]
    scripts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):  # GNU sed also takes options after operands
        arg = args[i]
        following = args[i + 1] if i + 1 < len(args) else ""
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg.startswith("--"):
            _name, eq, value = arg.partition("=")
            if long_option(arg, ("--in-place",)):
                return "sed --in-place edits files"
            if long_option(arg, ("--file",)):
                return "sed --file reads its script from a file"
            if long_option(arg, ("--expression",)):
                scripts.append(value if eq else following)
                i += 0 if eq else 1
            elif long_option(arg, ("--line-length",)) and not eq:
                i += 1
            continue
        if not arg.startswith("-") or len(arg) == 1:
            operands.append(arg)
            continue
        letters = arg[1:]
        for k, ch in enumerate(letters):
            if ch == "i":
                return "sed -i edits files"
            if ch == "f":
                return "sed -f reads its script from a file"
            if ch in "el":
                rest = letters[k + 1 :]
                if ch == "e":
                    scripts.append(rest or following)
                i += 0 if rest else 1
                break
    if not scripts and operands:
        scripts.append(operands[0])
    for script in scripts:
        why = sed_script_risk(script)
        if why is not None:
            return why
    return None


# -- sed scripts -----------------------------------------------------------------------------

_SED_SIMPLE = frozenset("pdDnNgGhHxlLqQ=zFPv{}")
_SED_TO_EOL = frozenset("aicrR")
_SED_LABEL = frozenset(":btT")


def sed_script_risk(script: str) -> str | None:
    """Why a sed script can run commands or write files (``e``, ``w``, ``W``, the ``s///w``
    and ``s///e`` flags), or cannot be read; None when it only edits the stream."""
    i, n = 0, len(script)
    while i < n:
        if script[i] in " \t\n;}":
            i += 1
            continue
        if script[i] == "#":
            i = _line_end(script, i)
            continue
        i = _sed_address(script, i)
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            return "the sed script ends after an address"
        cmd = script[i]
        i += 1
        if cmd in "ewW":
            return f"the sed command {cmd!r} runs a command or writes a file"
        if cmd == "s":
            end = _sed_delimited(script, i, 2)
            if end is None:
                return "the sed s command could not be read"
            j = end
            while j < n and script[j] not in ";\n}":
                if script[j] in "we":
                    return f"the sed s///{script[j]} flag runs a command or writes a file"
                j += 1
            i = j
        elif cmd == "y":
            end = _sed_delimited(script, i, 2)
            if end is None:
                return "the sed y command could not be read"
            i = end
        elif cmd in _SED_TO_EOL:
            i = _line_end(script, i)
        elif cmd in _SED_LABEL:
            while i < n and script[i] not in ";\n":
                i += 1
        elif cmd in _SED_SIMPLE:
            while i < n and script[i].isdigit():
                i += 1
        else:
            return f"the sed script has a command that could not be read ({cmd!r})"
    return None


def _line_end(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end + 1


def _sed_delimited(text: str, i: int, parts: int) -> int | None:
    """Index after ``parts`` delimited fields that start at ``text[i]`` (the delimiter)."""
    if i >= len(text) or text[i] in "\n\\":
        return None
    delimiter = text[i]
    i += 1
    for _ in range(parts):
        while i < len(text) and text[i] != delimiter:
            i += 2 if text[i] == "\\" else 1
        if i >= len(text):
            return None
        i += 1
    return i


def _sed_address(text: str, i: int) -> int:
    for _ in range(2):
        n = len(text)
        if i < n and (text[i].isdigit() or text[i] in "$+~"):
            i += 1
            while i < n and (text[i].isdigit() or text[i] == "~"):
                i += 1
        elif i < n and text[i] in "/\\":
            start = i + 1 if text[i] == "\\" else i
            end = _sed_delimited(text, start, 1)
            i = n if end is None else end
            while i < n and text[i] in "IM":
                i += 1
        if i < n and text[i] == ",":
            i += 1
            continue
        break
    return i
