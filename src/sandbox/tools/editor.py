#!/usr/bin/env python3
"""Editor tools that run inside a probe sandbox, so non-bash actions replay faithfully.

Arguments arrive as JSON in $PROBE_TOOL_ARGS: {"tool": "str_replace_editor" | "swe-agent",
"command": ..., ...}. State (the open file and window of SWE-agent's windowed editor, the
undo history of str_replace_editor) lives in /tmp, which lasts as long as the sandbox.
Exit status 0 on success, 1 when the tool rejected the action (the message says why).
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys

STATE = "/tmp/.probe-editor-state.json"


def load_state():
    try:
        with open(STATE) as f:
            state = json.load(f)
    except (OSError, ValueError):
        state = {}
    # States saved before the window followed SWE-agent's CURRENT_LINE have no current_line.
    state.setdefault("open_file", None)
    state.setdefault("current_line", 0)
    state.setdefault("history", {})
    return state


def save_state(state):
    with open(STATE, "w") as f:
        json.dump(state, f)


def absolute(path):
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(os.getcwd(), path))


def read(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return f.read()


def write(path, text):
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)


class Rejected(Exception):
    pass


# --- str_replace_editor (SWE-agent / OpenHands / R2E-Gym file_editor) -----------------

def cat_n(text, start=1):
    lines = text.split("\n")
    return "\n".join(f"{i + start:6}\t{line}" for i, line in enumerate(lines))


def snippet(path, text, line, context=4):
    lines = text.split("\n")
    lo = max(0, line - context)
    hi = min(len(lines), line + context + 1)
    return (f"The file {path} has been edited. Here's the result of running `cat -n` on a snippet of {path}:\n"
            + cat_n("\n".join(lines[lo:hi]), lo + 1)
            + "\nReview the changes and make sure they are as expected. Edit the file again if necessary.")


def str_replace_editor(args, state):
    command = args.get("command")
    path = absolute(args.get("path") or "")
    history = state.setdefault("history", {})
    if command == "view":
        if os.path.isdir(path):
            out = subprocess.run(["find", path, "-maxdepth", "2", "-not", "-path", "*/.*"], capture_output=True, text=True)
            return f"Here's the files and directories up to 2 levels deep in {path}, excluding hidden items:\n{out.stdout}"
        if not os.path.exists(path):
            raise Rejected(f"The path {path} does not exist. Please provide a valid path.")
        text = read(path)
        view_range = args.get("view_range")
        if view_range:
            lines = text.split("\n")
            start, end = int(view_range[0]), int(view_range[1])
            end = len(lines) if end == -1 else end
            return f"Here's the result of running `cat -n` on {path}:\n" + cat_n("\n".join(lines[start - 1:end]), start)
        return f"Here's the result of running `cat -n` on {path}:\n" + cat_n(text)
    if command == "create":
        if os.path.exists(path):
            raise Rejected(f"File already exists at: {path}. Cannot overwrite files using command `create`.")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write(path, args.get("file_text") or "")
        return f"File created successfully at: {path}"
    if not os.path.isfile(path):
        raise Rejected(f"The path {path} does not exist. Please provide a valid path.")
    text = read(path)
    if command == "str_replace":
        old = args.get("old_str")
        new = args.get("new_str") or ""
        if old is None:
            raise Rejected("Parameter `old_str` is required for command: str_replace")
        count = text.count(old)
        if count == 0:
            raise Rejected(f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}.")
        if count > 1:
            lines = [i + 1 for i, l in enumerate(text.split("\n")) if old.split("\n")[0] in l]
            raise Rejected(f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines {lines}. Please ensure it is unique")
        history.setdefault(path, []).append(text)
        at = text.index(old)
        write(path, text.replace(old, new, 1))
        return snippet(path, text.replace(old, new, 1), text[:at].count("\n"))
    if command == "insert":
        line = int(args.get("insert_line"))
        lines = text.split("\n")
        if line < 0 or line > len(lines):
            raise Rejected(f"Invalid `insert_line` parameter: {line}. It should be within the range of lines of the file: [0, {len(lines)}]")
        history.setdefault(path, []).append(text)
        new_lines = (args.get("new_str") or "").split("\n")
        updated = "\n".join(lines[:line] + new_lines + lines[line:])
        write(path, updated)
        return snippet(path, updated, line)
    if command == "undo_edit":
        if not history.get(path):
            raise Rejected(f"No edit history found for {path}.")
        write(path, history[path].pop())
        return f"Last edit to {path} undone successfully. Here's the result of running `cat -n` on {path}:\n" + cat_n(read(path))
    raise Rejected(f"Unrecognized command {command}. The allowed commands for the str_replace_editor tool are: view, create, str_replace, insert, undo_edit")


# --- SWE-agent's windowed editor --------------------------------------------------------
#
# As SWE-agent's shell commands wrote it (config/commands/defaults.sh, edit_linting.sh,
# search.sh, up to v0.5): the window is centred on CURRENT_LINE and numbers lines the way
# `grep -n` does; `edit N:M` rewrites the file with `printf "%s\n"` and keeps it only when
# flake8 finds no new error. The arithmetic follows the jq expressions there (floats, then
# floor or round) so every header, "(K more lines above)" and line range is the same.

WINDOW = 100
OVERLAP = 2
# SWE-agent's linter: the rules an edit must not break (edit_linting.sh).
LINT_SELECT = "F821,F822,F831,E111,E112,E113,E999,E902"


def file_lines(path):
    """The lines as awk and grep count them: a last line without a newline still counts."""
    lines = read(path).split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def jq_round(x):
    # jq's round: halves away from zero (Python's round() would go to the even neighbour).
    return int(math.floor(x + 0.5))


def constrain(state, window=WINDOW):
    max_line = len(file_lines(state["open_file"]))
    half = math.floor(window / 2)
    state["current_line"] = max(min(state["current_line"], max_line - half), half)


def window(state, window=WINDOW):
    path = state.get("open_file")
    if not path:
        raise Rejected("No file open. Use the open command first.")
    lines = file_lines(path)
    current = state["current_line"]
    above = math.floor(max(0, current - window / 2))
    below = jq_round(max(0, len(lines) - current - window / 2))
    last = min(len(lines), math.floor(max(current + window / 2, window / 2)))
    first = max(1, last - window + 1)
    out = [f"[File: {path} ({len(lines)} lines total)]"]
    if above > 0:
        out.append(f"({above} more lines above)")
    out += [f"{i}:{lines[i - 1]}" for i in range(first, last + 1)]
    if below > 0:
        out.append(f"({below} more lines below)")
    return "\n".join(out)


def centre_on(line):
    """Where `open FILE N` and `goto N` put CURRENT_LINE: N a sixth of a window from the top."""
    return max(math.floor(line + WINDOW / 2 - math.floor(WINDOW / 6)), 1)


def lint(path):
    """flake8's findings on `path` as (line, col, problem), or None when no linter exists here."""
    if not path.endswith(".py"):
        return []
    flake8 = shutil.which("flake8")
    if flake8 is None:
        return None
    out = subprocess.run([flake8, "--isolated", f"--select={LINT_SELECT}", path], capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        prefix, _, problem = line.strip().partition(": ")
        parts = prefix.rsplit(":", 2)
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            found.append((int(parts[1]), int(parts[2]), problem))
    return found


def syntax_only(path):
    """Without flake8: what Python's own compiler reports, as flake8's E999 would."""
    if not path.endswith(".py"):
        return []
    try:
        compile(read(path), path, "exec")
    except SyntaxError as error:
        return [(error.lineno or 1, error.offset or 1, f"E999 {type(error).__name__}: {error.msg}")]
    return []


def new_errors(before, after, first, last, n_lines):
    """The errors after an edit of lines first..last (n_lines new ones) that were not there before (SWE-agent's _split_string)."""
    shift = n_lines - (last - first + 1)
    kept = set()
    for line, col, problem in before:
        if line < first:
            kept.add((line, col, problem))
        elif line > last:
            kept.add((line + shift, col, problem))
    return [e for e in after if e not in kept]


LINT_ABSENT = ("(probe: flake8 is not installed in this sandbox, so only syntax errors were checked; "
               "SWE-agent also refuses edits that add undefined names (F821, F822), duplicate arguments (F831) "
               "and bad indentation (E111-E113))")


def checked_write(state, path, before_text, after_text, first, last, n_lines):
    """Writes the edit, lints it as SWE-agent does, and puts the file back when the edit adds errors.
    Returns (errors introduced, whether flake8 was absent)."""
    errors_before = lint(path)
    absent = errors_before is None
    if absent:
        errors_before = syntax_only(path)
    write(path, after_text)
    errors_after = syntax_only(path) if absent else lint(path)
    found = new_errors(errors_before, errors_after, first, last, n_lines)
    if found:
        write(path, before_text)
    else:
        state.setdefault("history", {}).setdefault(path, []).append(before_text)
    return found, absent


def open_file(state, argv):
    if not argv:
        raise Rejected('Usage: open "<file>"')
    path, out = argv[0], []
    if len(argv) > 1:
        if not re.fullmatch(r"[0-9]+", argv[1]):
            raise Rejected('Usage: open "<file>" [<line_number>]\nError: <line_number> must be a number')
        requested = int(argv[1])
        max_line = len(file_lines(path)) if os.path.isfile(path) else 0
        if requested > max_line:
            out += [f"Warning: <line_number> ({requested}) is greater than the number of lines in the file ({max_line})",
                    f"Warning: Setting <line_number> to {max_line}"]
            line = max_line
        elif requested < 1:
            out += [f"Warning: <line_number> ({requested}) is less than 1", "Warning: Setting <line_number> to 1"]
            line = 1
        else:
            line = centre_on(requested)
    else:
        line = WINDOW // 2
    if os.path.isfile(path):
        state["open_file"] = os.path.realpath(path)
        state["current_line"] = line
        constrain(state)
        return "\n".join(out + [window(state)])
    if os.path.isdir(path):
        raise Rejected("\n".join(out + [f"Error: {path} is a directory. You can only open files. Use cd or ls to navigate directories."]))
    raise Rejected("\n".join(out + [f"File {path} not found"]))


def edit_lines(state, args):
    path = state.get("open_file")
    if not path:
        raise Rejected("No file open. Use the `open` command first.")
    start, end = int(args["start"]), int(args["end"])
    text = read(path)
    lines = file_lines(path)
    replacement = args.get("replacement", "")
    # `while read -r line` over the heredoc: no text, no line.
    new = replacement.split("\n") if replacement != "" else []
    updated = lines[:start - 1] + new + lines[end:]
    # printf "%s\n" "${new_lines[@]}": every line ends with a newline (and no lines still print one).
    errors, absent = checked_write(state, path, text, "\n".join(updated) + "\n", start, end, len(new))
    note = f"\n{LINT_ABSENT}" if absent else ""
    if not errors:
        state["current_line"] = start - 1
        constrain(state)
        return window(state) + "\nFile updated. Please review the changes and make sure they are correct (correct indentation, no duplicate lines, etc). Edit the file again if necessary." + note
    # Both windows as edit_linting.sh shows them: around the edit as it would have been, then the original lines.
    write(path, "\n".join(updated) + "\n")
    applied_state = {"open_file": path, "current_line": len(new) // 2 + start - 1}
    constrain(applied_state, len(new) + 10)
    applied = window(applied_state, len(new) + 10)
    write(path, text)
    original_state = {"open_file": path, "current_line": (end - start + 2) // 2 + start - 1}
    constrain(original_state, end - start + 11)
    original = window(original_state, end - start + 11)
    rule = "-------------------------------------------------"
    raise Rejected("\n".join([
        "Your proposed edit has introduced new syntax error(s). Please understand the fixes and retry your edit commmand.",
        "", "ERRORS:", *[f"- {problem}" for _, _, problem in errors], "",
        "This is how your edit would have looked if applied", rule, applied, rule, "",
        "This is the original code before your edit", rule, original, rule,
        "Your changes have NOT been applied. Please fix your edit command and try again.",
        "You either need to 1) Specify the correct start/end line arguments or 2) Correct your edit code.",
        "DO NOT re-run the same failed edit command. Running it again will lead to the same error.",
    ]) + note)


def edit_replace(state, args):
    """`edit 'search' 'replace' [replace_all]` (SWE-agent 1.0's windowed_edit_replace)."""
    path = state.get("open_file")
    if not path:
        raise Rejected("No file open. Use the `open` command first.")
    text = read(path)
    search, replace = args["search"], args["replace"]
    count = text.count(search)
    if count == 0:
        raise Rejected(f"Your search string {search!r} was not found in the file.")
    if count > 1 and not args.get("replace_all"):
        raise Rejected(f"Your search string {search!r} appears {count} times. Use replace_all or a longer search string.")
    updated = text.replace(search, replace) if args.get("replace_all") else text.replace(search, replace, 1)
    first = text[:text.index(search)].count("\n") + 1
    errors, absent = checked_write(state, path, text, updated, first, first + search.count("\n"), replace.count("\n") + 1)
    note = f"\n{LINT_ABSENT}" if absent else ""
    if errors:
        raise Rejected("Your proposed edit has introduced new syntax error(s). Please read this error message carefully and then retry editing the file.\n\nERRORS:\n\n"
                       + "\n".join(f"- {problem}" for _, _, problem in errors)
                       + "\n\nYour changes have NOT been applied. Please fix your edit command and try again.\nDO NOT re-run the same failed edit command. Running it again will lead to the same error." + note)
    state["current_line"] = centre_on(first)
    constrain(state)
    return f"Replaced {count if args.get('replace_all') else 1} occurrences. Please review the changes and make sure they are correct\n(correct indentation, no duplicate lines, etc). Edit the file again if necessary.\n" + window(state) + note


def name_and_dir(argv, usage):
    """`search_dir`'s and `find_file`'s arguments: a term and a directory (default ./), checked as SWE-agent did."""
    if len(argv) not in (1, 2):
        raise Rejected(usage)
    term, where = argv[0], (argv[1] if len(argv) == 2 else "./")
    if not os.path.isdir(where):
        raise Rejected(f"Directory {where} not found")
    return term, os.path.realpath(where)


def search_dir(argv):
    term, where = name_and_dir(argv, "Usage: search_dir <search_term> [<dir>]")
    out = subprocess.run(["find", where, "-type", "f", "!", "-path", "*/.*", "-exec", "grep", "-nIH", "--", term, "{}", "+"], capture_output=True, text=True).stdout
    counts = {}
    for line in out.splitlines():
        name = line.split(":", 1)[0]
        counts[name] = counts.get(name, 0) + 1
    if not counts:
        return f'No matches found for "{term}" in {where}'
    if len(counts) > 100:
        return f'More than {len(counts)} files matched for "{term}" in {where}. Please narrow your search.'
    body = "\n".join(f"{name} ({n} matches)" for name, n in sorted(counts.items()))
    return f'Found {sum(counts.values())} matches for "{term}" in {where}:\n{body}\nEnd of matches for "{term}" in {where}'


def search_file(state, argv):
    if not argv:
        raise Rejected("Usage: search_file <search_term> [<file>]")
    if len(argv) > 1:
        if not os.path.isfile(argv[1]):
            raise Rejected(f"Usage: search_file <search_term> [<file>]\nError: File name {argv[1]} not found. Please provide a valid file name.")
        path = argv[1]
    elif state.get("open_file"):
        path = state["open_file"]
    else:
        raise Rejected("No file open. Use the open command first.")
    term, path = argv[0], os.path.realpath(path)
    out = subprocess.run(["grep", "-n", "--", term, path], capture_output=True, text=True).stdout
    numbers = sorted({int(l.split(":", 1)[0]) for l in out.splitlines() if l.split(":", 1)[0].isdigit()})
    if not numbers:
        return f'No matches found for "{term}" in {path}'
    if len(numbers) > 100:
        return f'More than {len(numbers)} lines matched for "{term}" in {path}. Please narrow your search.'
    lines = file_lines(path)
    hits = [f"Line {n}:{lines[n - 1]}" for n in numbers]
    return f'Found {len(out.splitlines())} matches for "{term}" in {path}:\n' + "\n".join(hits) + f'\nEnd of matches for "{term}" in {path}'


def find_file(argv):
    name, where = name_and_dir(argv, "Usage: find_file <file_name> [<dir>]")
    # SWE-agent printed find's order, which is the file system's (readdir) order: sorted is what
    # a replay can reproduce, and what the recorded runs show (pydicom-1458: overlays, pixel_data_handlers, waveforms).
    found = sorted(subprocess.run(["find", where, "-type", "f", "-name", name], capture_output=True, text=True).stdout.splitlines())
    if not found:
        return f'No matches found for "{name}" in {where}'
    return f'Found {len(found)} matches for "{name}" in {where}:\n' + "\n".join(found)


def swe_agent(args, state):
    command = args.get("command")
    argv = args.get("argv") or []
    if command == "open":
        return open_file(state, argv)
    if command == "goto":
        if len(argv) > 1:
            raise Rejected("goto allows only one line number at a time.")
        if not state.get("open_file"):
            raise Rejected("No file open. Use the open command first.")
        if not argv:
            raise Rejected("Usage: goto <line>")
        if not re.fullmatch(r"[0-9]+", argv[0]):
            raise Rejected("Usage: goto <line>\nError: <line> must be a number")
        max_line = len(file_lines(state["open_file"]))
        if int(argv[0]) > max_line:
            raise Rejected(f"Error: <line> must be less than or equal to {max_line}")
        state["current_line"] = centre_on(int(argv[0]))
        constrain(state)
        return window(state)
    if command in ("scroll_down", "scroll_up"):
        if not state.get("open_file"):
            raise Rejected("No file open. Use the open command first.")
        state["current_line"] += (WINDOW - OVERLAP) if command == "scroll_down" else -(WINDOW - OVERLAP)
        constrain(state)
        return window(state)
    if command == "create":
        if not argv:
            raise Rejected("Usage: create <filename>")
        if os.path.exists(argv[0]):
            # SWE-agent says so, then opens the existing file anyway.
            shown = open_file(state, argv[:1])
            raise Rejected(f"Error: File '{argv[0]}' already exists.\n{shown}")
        parent = os.path.dirname(absolute(argv[0]))
        if not os.path.isdir(parent):
            raise Rejected(f"bash: {argv[0]}: No such file or directory\nFile {argv[0]} not found")
        write(argv[0], "\n")
        return open_file(state, argv[:1])
    if command == "edit":
        return edit_lines(state, args)
    if command == "edit_replace":
        return edit_replace(state, args)
    if command == "find_file":
        return find_file(argv)
    if command == "search_dir":
        return search_dir(argv)
    if command == "search_file":
        return search_file(state, argv)
    raise Rejected(f"unknown SWE-agent command {command}")


def main():
    args = json.loads(os.environ["PROBE_TOOL_ARGS"])
    state = load_state()
    try:
        if args.get("tool") == "swe-agent":
            out = swe_agent(args, state)
        else:
            out = str_replace_editor(args, state)
        status = 0
    except Rejected as error:
        out, status = str(error), 1
    save_state(state)
    sys.stdout.write(out + ("" if out.endswith("\n") else "\n"))
    return status


if __name__ == "__main__":
    sys.exit(main())
