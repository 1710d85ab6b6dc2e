#!/usr/bin/env python3
"""Editor tools that run inside a probe sandbox, so non-bash actions replay faithfully.

Arguments arrive as JSON in $PROBE_TOOL_ARGS: {"tool": "str_replace_editor" | "swe-agent",
"command": ..., ...}. State (the open file and window of SWE-agent's windowed editor, the
undo history of str_replace_editor) lives in /tmp, which lasts as long as the sandbox.
Exit status 0 on success, 1 when the tool rejected the action (the message says why).
"""
import json
import os
import subprocess
import sys

STATE = "/tmp/.probe-editor-state.json"
WINDOW = 100


def load_state():
    try:
        with open(STATE) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {"open_file": None, "first_line": 1, "history": {}}


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

def window(state):
    path = state.get("open_file")
    if not path:
        raise Rejected("No file open. Use the open command first.")
    lines = read(path).split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    first = max(1, min(state.get("first_line", 1), max(1, len(lines) - WINDOW + 1)))
    state["first_line"] = first
    last = min(len(lines), first + WINDOW - 1)
    out = [f"[File: {path} ({len(lines)} lines total)]"]
    if first > 1:
        out.append(f"({first - 1} more lines above)")
    out += [f"{i}:{lines[i - 1]}" for i in range(first, last + 1)]
    if last < len(lines):
        out.append(f"({len(lines) - last} more lines below)")
    return "\n".join(out)


def center(state, line):
    state["first_line"] = max(1, line - WINDOW // 2)


def syntax_error(path, text):
    if not path.endswith(".py"):
        return None
    try:
        compile(text, path, "exec")
    except SyntaxError as error:
        return f"{path}:{error.lineno}:{error.offset}: E999 SyntaxError: {error.msg}"
    return None


def apply_edit(state, path, before, after):
    error = syntax_error(path, after)
    if error:
        raise Rejected("Your proposed edit has introduced new syntax error(s). Please understand the fixes and retry your edit command.\n\nERRORS:\n- " + error + "\n\nYour changes have NOT been applied. Please fix your edit command and try again.")
    state.setdefault("history", {}).setdefault(path, []).append(before)
    write(path, after)


def swe_agent(args, state):
    command = args.get("command")
    argv = args.get("argv") or []
    if command == "open":
        path = absolute(argv[0])
        if not os.path.isfile(path):
            raise Rejected(f"File {argv[0]} not found")
        state["open_file"] = path
        state["first_line"] = 1
        if len(argv) > 1:
            center(state, int(argv[1]))
        return window(state)
    if command == "goto":
        center(state, int(argv[0]))
        return window(state)
    if command in ("scroll_down", "scroll_up"):
        step = WINDOW if command == "scroll_down" else -WINDOW
        state["first_line"] = max(1, state.get("first_line", 1) + step)
        return window(state)
    if command == "create":
        path = absolute(argv[0])
        if os.path.exists(path):
            raise Rejected(f"Error: File '{argv[0]}' already exists.")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write(path, "\n")
        state["open_file"] = path
        state["first_line"] = 1
        return window(state)
    if command == "edit":
        path = state.get("open_file")
        if not path:
            raise Rejected("No file open. Use the `open` command first.")
        text = read(path)
        lines = text.split("\n")
        start, end = int(args["start"]), int(args["end"])
        replacement = args.get("replacement", "").split("\n")
        updated = "\n".join(lines[:start - 1] + replacement + lines[end:])
        apply_edit(state, path, text, updated)
        center(state, start)
        return window(state) + "\nFile updated. Please review the changes and make sure they are correct (correct indentation, no duplicate lines, etc). Edit the file again if necessary."
    if command == "edit_replace":
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
        apply_edit(state, path, text, updated)
        center(state, text[:text.index(search)].count("\n") + 1)
        return f"Replaced {count if args.get('replace_all') else 1} occurrences. Please review the changes and make sure they are correct\n(correct indentation, no duplicate lines, etc). Edit the file again if necessary.\n" + window(state)
    if command == "find_file":
        name, where = argv[0], absolute(argv[1] if len(argv) > 1 else ".")
        found = sorted(subprocess.run(["find", where, "-name", name, "-not", "-path", "*/.git/*"], capture_output=True, text=True).stdout.split())
        if not found:
            return f'No matches found for "{name}" in {where}'
        return f'Found {len(found)} matches for "{name}" in {where}:\n' + "\n".join(found)
    if command == "search_dir":
        term, where = argv[0], absolute(argv[1] if len(argv) > 1 else ".")
        out = subprocess.run(["grep", "-rIc", "--exclude-dir=.git", "-F", term, where], capture_output=True, text=True).stdout
        hits = [(p, int(n)) for p, n in (l.rsplit(":", 1) for l in out.splitlines()) if int(n) > 0]
        if not hits:
            return f'No matches found for "{term}" in {where}'
        body = "\n".join(f"{p} ({n} matches)" for p, n in sorted(hits))
        return f'Found {sum(n for _, n in hits)} matches for "{term}" in {where}:\n{body}\nEnd of matches for "{term}" in {where}'
    if command == "search_file":
        term = argv[0]
        path = absolute(argv[1]) if len(argv) > 1 else state.get("open_file")
        if not path:
            raise Rejected("No file open. Use the open command first.")
        hits = [f"Line {i + 1}:{l}" for i, l in enumerate(read(path).split("\n")) if term in l]
        if not hits:
            return f'No matches found for "{term}" in {path}'
        return f'Found {len(hits)} matches for "{term}" in {path}:\n' + "\n".join(hits) + f'\nEnd of matches for "{term}" in {path}'
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
