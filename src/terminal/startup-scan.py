# probe's start-up scan, run right before a Terminal-Bench task's tests (see grader-env.ts).
# Every agent process is dead by now, and this runs as `python3 -I -S` (no site, no
# environment, no working directory on sys.path), so nothing the agent wrote runs here.
#
# It finds what the agent planted where the grader's shell and Python look before any test
# runs, removes it (so the tests run as if it had never been written) and prints one JSON
# object: {"tampering": [{"path", "reason", "removed"}], "python": <the grader's python3 or null>}.
#
# "Planted" is decided from ctime, which no unprivileged process can set back: an entry
# whose inode (or anything under it) changed after the marker root made at container start
# (before the agent's first action). Only directories the agent could write are looked at
# (owned by its uid, writable by it, or replaceable because their parent is): the rest
# cannot hold anything of the agent's.
import importlib.machinery
import json
import os
import re
import stat
import subprocess
import sys

MARKER = os.environ["PROBE_MARKER"]
PATH_DIRS = [d for d in os.environ["PROBE_PATH"].split(":") if d.startswith("/")]
PYTHONPATH_DIRS = [d for d in os.environ.get("PROBE_PYTHONPATH", "").split(":") if d.startswith("/")]
AGENT_HOME = os.environ["PROBE_AGENT_HOME"]
WORKDIR = os.environ["PROBE_WORKDIR"]
# Every tree the agent could write (the container's root file system is read-only): searched for git repositories.
WRITABLE_ROOTS = [d for d in os.environ["PROBE_WRITABLE"].split(":") if d.startswith("/")]
# The grader's fresh HOME and TMPDIR, made just now: nothing of the agent's is in them.
GRADER_DIRS = {os.environ["PROBE_GRADER_HOME"], os.environ["PROBE_GRADER_TMP"]}
UID = os.getuid()
SINCE = os.stat(MARKER).st_ctime_ns
# Modules the test runner imports before the first test: a copy of one of them anywhere on
# its path decides what the run reports.
RUNNER = {
    "pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "exceptiongroup", "tomli", "attr",
    "attrs", "importlib_metadata", "zipp", "more_itertools", "typing_extensions", "colorama", "pygments",
    "unittest", "doctest", "coverage", "xdist", "execnet", "nose", "nose2",
}
STARTUP = {"sitecustomize", "usercustomize"}
# Run by the grader's python3 as `-I -S`, with sys.path set to the directories of its path the
# agent could not write (so only what the image installed is imported). A finder first on
# sys.meta_path records the top-level name of every import Python *attempts* — the failed
# ones included: copy.py tries `from org.python.core import PyStringMap`, subprocess tries
# `import msvcrt`, and either would import a planted `org/` or `msvcrt.py` from a directory
# earlier on the real run's path. It finds nothing itself. Then the import lines of the
# image's .pth files run (site runs them at every start-up), the standard library's runner
# modules are imported, and pytest collects an empty directory of ours, with an empty ini
# file and no conftest (so no file of the agent's is read); without pytest, what came before
# still counts. Prints the names and the import suffixes.
RUNNER_PROBE = r"""
import sys
import json
sites = json.loads(sys.argv[1])
sys.path[:] = sys.argv[2:]
tried = set()
class Attempts:
    @staticmethod
    def find_spec(name, path=None, target=None):
        tried.add(name.partition(".")[0])
        return None
sys.meta_path.insert(0, Attempts)
import os, tempfile
for d in sites:
    try:
        pths = sorted(n for n in os.listdir(d) if n.endswith(".pth"))
    except OSError:
        continue
    for n in pths:
        try:
            lines = open(os.path.join(d, n), encoding="utf-8", errors="replace").read().splitlines()
        except OSError:
            continue
        for line in lines:
            if line.startswith(("import ", "import\t")):
                try:
                    exec(line)
                except BaseException:
                    pass
# What any Python test run imports, pytest or not (copy, subprocess: the failed attempts above).
for name in ("unittest", "subprocess", "copy", "json", "argparse", "logging", "tempfile", "shutil"):
    try:
        __import__(name)
    except BaseException:
        pass
root = tempfile.mkdtemp()
open(os.path.join(root, "pytest.ini"), "w").close()
try:
    import pytest
    pytest.main(["--collect-only", "-q", "--noconftest", "-c", os.path.join(root, "pytest.ini"), "--rootdir", root, root])
except BaseException:
    pass
import importlib.machinery, shutil
shutil.rmtree(root, ignore_errors=True)
names = sorted(tried | {m.partition(".")[0] for m in sys.modules})
print("PROBE-RUNNER " + json.dumps([names, importlib.machinery.all_suffixes()]))
"""
RUNNER_PROBE_SECONDS = 30
WALK_CAP = 20000

found = []


def report(path, reason, remove=True):
    removed = False
    if remove:
        removed = delete(path)
    found.append({"path": path, "reason": reason, "removed": removed if remove else None})


def delete(path):
    parent = os.path.dirname(path)
    try:
        # The agent may have left its own directory read-only; as its owner we may open it.
        if os.stat(parent).st_uid == UID:
            os.chmod(parent, os.stat(parent).st_mode | stat.S_IWUSR | stat.S_IXUSR)
        if os.path.isdir(path) and not os.path.islink(path):
            for root, dirs, _ in os.walk(path):
                for d in dirs:
                    p = os.path.join(root, d)
                    if not os.path.islink(p) and os.stat(p).st_uid == UID:
                        os.chmod(p, 0o700)
            os.chmod(path, 0o700) if os.stat(path).st_uid == UID else None
            import shutil

            shutil.rmtree(path)
        else:
            os.unlink(path)
        return True
    except OSError:
        return False


def controlled(path):
    """Whether the agent could have written `path` or put another thing in its place."""
    try:
        p = os.path.realpath(path)
        while True:
            st = os.stat(p)
            if st.st_uid == UID or os.access(p, os.W_OK):
                return True
            if p == "/":
                return False
            parent = os.path.dirname(p)
            pst = os.stat(parent)
            if pst.st_uid == UID:
                return True
            sticky = pst.st_mode & stat.S_ISVTX
            if os.access(parent, os.W_OK) and not sticky:
                return True
            p = parent
    except OSError:
        return False


def changed(path):
    """Whether the entry, or anything under it, changed after the marker."""
    try:
        if os.lstat(path).st_ctime_ns > SINCE:
            return True
        if not os.path.isdir(path) or os.path.islink(path):
            return False
        seen = 0
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                seen += 1
                if seen > WALK_CAP or os.lstat(os.path.join(root, name)).st_ctime_ns > SINCE:
                    return True
        return False
    except OSError:
        return True


def entries(d):
    try:
        return sorted(os.listdir(d))
    except OSError:
        return []


# importlib.metadata lower-cases a directory entry before matching these (an "x.DIST-INFO"
# is a distribution too), so they are matched case-blind; site.py matches ".pth" as written.
METADATA = (".dist-info", ".egg-info", ".egg-link", ".egg")


def is_metadata(name):
    return name.lower().endswith(METADATA)


def module_of(name):
    """The module a directory entry would import as (None for what import never reads)."""
    if is_metadata(name) or name.endswith(".pth"):
        return None
    base = name.split(".", 1)[0]
    return base or None


def kind_of(name):
    if name.endswith(".pth"):
        return ".pth file: Python runs its import lines and adds its paths at start-up"
    if is_metadata(name):
        return "packaging metadata (.dist-info/.egg-info): pytest loads the plugins its entry points name"
    if module_of(name) in STARTUP:
        return "sitecustomize/usercustomize: Python imports it at start-up, before any test"
    return None


def runner_imports(python, sites, path):
    """Every top-level name the grader's test runner tries to import at start-up (see RUNNER_PROBE), or None."""
    try:
        out = subprocess.run(
            [python, "-I", "-S", "-c", RUNNER_PROBE, json.dumps(sites), *path],
            capture_output=True,
            text=True,
            timeout=RUNNER_PROBE_SECONDS,
            cwd="/",
        ).stdout
        line = [l for l in out.splitlines() if l.startswith("PROBE-RUNNER ")][-1]
        names, suffixes = json.loads(line[len("PROBE-RUNNER ") :])
        return (set(names), suffixes) if names else None
    except (OSError, subprocess.SubprocessError, IndexError, ValueError, TypeError):
        return None


def import_name(d, name, suffixes):
    """The module `import` would load from the entry `name` of directory `d` (None if none):
    a file named module + an import suffix (source, sourceless .pyc, extension module) or a
    regular package (a directory with an __init__). On Linux the match is case-sensitive, and a
    directory without __init__ is only a namespace portion, which any regular module wins over."""
    path = os.path.join(d, name)
    if os.path.isdir(path):
        if any(os.path.isfile(os.path.join(path, "__init__" + s)) for s in suffixes):
            return name
        return None
    for s in sorted(suffixes, key=len, reverse=True):
        if name.endswith(s) and len(name) > len(s):
            return name[: -len(s)]
    return None


# 1. Commands: a directory on the grader's PATH that the agent could write keeps only what it held at start.
for d in PATH_DIRS:
    if os.path.isdir(d) and controlled(d):
        for name in entries(d):
            path = os.path.join(d, name)
            if changed(path):
                report(path, f"a command put in {d}, a directory on the grader's PATH")


def which(command):
    for d in PATH_DIRS:
        path = os.path.join(d, command)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def stdlib_names():
    """Every standard-library and built-in module name of this python, those that do not exist
    on Linux included (msvcrt, winreg, _winapi: tried at start-up, found nowhere, so a planted
    one would load). Python before 3.10 has no stdlib_module_names: its stdlib directory says."""
    names = set(sys.builtin_module_names)
    if hasattr(sys, "stdlib_module_names"):
        return names | set(sys.stdlib_module_names)
    import sysconfig

    for d in (sysconfig.get_paths()["stdlib"], os.path.join(sysconfig.get_paths()["stdlib"], "lib-dynload")):
        names |= {module_of(n) for n in entries(d) if n != "site-packages"} - {None}
    return names


python = which("python3")
# The names a planted module must not have: every name Python tries to import before the first
# test (the standard library's, the runner's, and what the runner probe saw attempted).
shadowed = stdlib_names() | RUNNER | STARTUP
suffixes = importlib.machinery.all_suffixes()
if python:
    # 2. The grader python's own search path, as site would build it (PYTHONPATH, stdlib, site dirs,
    # the paths their .pth files add), read without running any of it.
    probe = subprocess.run(
        [python, "-I", "-S", "-c", "import json, site, sys; print(json.dumps([sys.path, site.getsitepackages()]))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    try:
        stdlib, sites = json.loads(probe.stdout)
    except ValueError:
        stdlib, sites = [], []
    search = list(PYTHONPATH_DIRS) + [p for p in stdlib if p]
    for site_dir in sites:
        if not os.path.isdir(site_dir):
            continue
        search.append(site_dir)
        for name in entries(site_dir):
            path = os.path.join(site_dir, name)
            if not name.endswith(".pth") or (controlled(site_dir) and changed(path)):
                continue
            try:
                lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
            except OSError:
                continue
            for line in lines:
                line = line.rstrip()
                if line and not line.startswith(("#", "import ", "import\t")):
                    search.append(os.path.join(site_dir, line))
    dirs = []
    for p in search:
        real = os.path.realpath(p)
        if real not in dirs:
            dirs.append(real)
    names_in = {d: {module_of(n) for n in entries(d)} - {None} for d in dirs if os.path.isdir(d)}
    trusted_sites = [d for d in sites if os.path.isdir(d) and not controlled(d)]
    probed = runner_imports(python, trusted_sites, [d for d in dirs if os.path.isdir(d) and not controlled(d)])
    if probed:
        shadowed |= probed[0]
        suffixes = sorted(set(suffixes) | set(probed[1]))
    for d in dirs:
        if not os.path.exists(d) or not controlled(d):
            continue
        if not os.path.isdir(d):
            if changed(d):
                report(d, "an archive on the grader's Python path, changed by the agent")
            continue
        others = set().union(*(names for other, names in names_in.items() if other != d))
        for name in entries(d):
            path = os.path.join(d, name)
            if name == "__pycache__":
                for pyc in entries(path):
                    module = pyc.split(".", 1)[0]
                    if (module in shadowed or module in others) and changed(os.path.join(path, pyc)):
                        report(os.path.join(path, pyc), "compiled bytecode: Python may run it instead of the source")
                continue
            reason = kind_of(name)
            module = module_of(name)
            if reason is None and module is not None and (module in shadowed or module in others):
                reason = f'shadows the module "{module}" that Python tries to import before the first test, or another directory holds'
            if reason and changed(path):
                report(path, f"{reason} ({d} is on the grader's Python path)")

# 3. What a grader with the agent's HOME would have read. The grader has a fresh HOME and
# runs python with -s, so none of it is read; it is reported, and left for the tests (which
# may look at the agent's files).
home_startup = [".local/bin/env", ".bashrc", ".bash_profile", ".bash_login", ".profile", ".bash_logout", ".zshenv", ".cargo/env"]
for rel in home_startup:
    path = os.path.join(AGENT_HOME, rel)
    if os.path.lexists(path) and changed(path):
        report(path, "a shell or runner start-up file in the agent's HOME (the grader's HOME is a fresh one)", remove=False)
user_lib = os.path.join(AGENT_HOME, ".local", "lib")
for py in entries(user_lib):
    site_dir = os.path.join(user_lib, py, "site-packages")
    for name in entries(site_dir):
        path = os.path.join(site_dir, name)
        if changed(path):
            report(path, "in the agent's user site (the grader runs python with -s and a fresh HOME)", remove=False)
# The working directory is first on sys.path for a `python3 -m pytest` that a task's own
# test.sh may run from it (not through probe's uvx, which runs python with -P): a module there
# named like one Python tries to import before the first test (pytest, its plugins, any
# standard-library module — msvcrt and the other names that exist on no Linux included — or
# a name the runner probe saw attempted) or a start-up module would be imported instead, as
# would a pytest11 plugin its metadata names. It is removed and reported; the rest stays for
# the tests. (A task whose own deliverable is named like a standard-library module loses it
# here, visibly: the grade names it.)
if os.path.isdir(WORKDIR):
    for name in entries(WORKDIR):
        path = os.path.join(WORKDIR, name)
        if name == "__pycache__" and os.path.isdir(path) and not os.path.islink(path):
            for pyc in entries(path):
                if pyc.split(".", 1)[0] in shadowed and changed(os.path.join(path, pyc)):
                    report(os.path.join(path, pyc), "compiled bytecode of a module the test runner imports, in the working directory")
            continue
        plugin = False
        if name.lower().endswith((".dist-info", ".egg-info")):
            try:
                plugin = "pytest11" in open(os.path.join(path, "entry_points.txt"), encoding="utf-8", errors="replace").read()
            except OSError:
                plugin = False
        module = import_name(WORKDIR, name, suffixes)
        if (plugin or module in shadowed) and changed(path):
            what = "a pytest11 plugin's metadata" if plugin else f'shadows the module "{module}" that Python tries to import at start-up'
            report(path, f"{what}: would load into a `python3 -m pytest` run from the working directory")

# 4. Git. The tests' git runs with probe's settings in its environment (grader-env.ts), which
# outrank a repository's for every fixed key that runs a command (core.fsmonitor, hooksPath,
# pager, editor, askPass, sshCommand, credential helpers, gpg…). What no environment setting
# can switch off is named in the repository's own config: drivers that attributes select
# (filter.<name>.clean/smudge/process, diff.<name>.command/textconv, merge.<name>.driver),
# diff.external, remote.<name>.uploadpack/receivepack, submodule.<name>.update = !…, trailer
# and tool commands. Every repository in a tree the agent could write is listed as git reads
# its config (includes followed); an entry that would run a command, from a config file the
# agent changed, is removed and reported (one the image shipped unchanged is the task
# author's); so are attribute lines naming a removed driver, and hooks the agent wrote
# (never run: core.hooksPath is /dev/null for the tests).
GIT_RUNS = re.compile(
    r"^(?:core\.(?:fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy|alternaterefscommand)"
    r"|sequence\.editor|diff\.external|credential\.(?:.+\.)?helper|pager\..+|gpg\.(?:.+\.)?program"
    r"|gpg\.ssh\.defaultkeycommand|filter\..+\.(?:clean|smudge|process)|diff\..+\.(?:command|textconv)"
    r"|merge\..+\.driver|remote\..+\.(?:uploadpack|receivepack)|trailer\..+\.(?:command|cmd)"
    r"|(?:difftool|mergetool)\..+\.cmd|hook\..+\.command|uploadpack\.packobjectshook|protocol\.(?:ext\.)?allow"
    r"|submodule\..+\.update|alias\..+)$",
    re.IGNORECASE,
)
FALSE = ("false", "no", "off", "0")
DRIVER = re.compile(r"^(filter|diff|merge)\.(.+)\.[^.]+$", re.IGNORECASE)
GIT_LIST_SECONDS = 30


def runs_command(key, value):
    """Whether a config entry makes git run a program (a value that only switches a thing off does not)."""
    k = key.lower()
    if not GIT_RUNS.match(k):
        return False
    if k.startswith(("alias.", "submodule.")):
        return value.startswith("!")
    if k.startswith("protocol."):
        return value.lower() != "never"
    if k == "core.fsmonitor" or k.startswith("pager."):
        return value.lower() not in FALSE + ("true", "yes", "on", "1", "")
    return value != ""


def walk_writable():
    """(directory, subdirectories, files) of every tree the agent could write, links not followed,
    the grader's own fresh directories and git object stores (no config there; they can be large) left out."""
    for top in WRITABLE_ROOTS:
        if not os.path.isdir(top) or os.path.islink(top):
            continue
        for root, dirs, files in os.walk(top):
            if root in GRADER_DIRS:
                dirs[:] = []
                continue
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
            yield root, dirs, files
            if "HEAD" in files:
                dirs[:] = [d for d in dirs if d != "objects"]


def is_git_dir(root, dirs, files):
    """As git tells a repository from a directory: HEAD, and objects/ and refs/ or a commondir file."""
    return "HEAD" in files and ("commondir" in files or ("objects" in dirs and "refs" in dirs))


def git_config(git, git_dir):
    """(origin file, key, value) of every entry git reads for this repository, or None if it cannot say."""
    env = {"PATH": ":".join(PATH_DIRS), "HOME": "/nonexistent", "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1"}
    env.update({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"})
    try:
        out = subprocess.run(
            [git, "--git-dir=" + git_dir, "config", "--list", "--show-origin", "-z"],
            capture_output=True,
            timeout=GIT_LIST_SECONDS,
            cwd="/",
            env=env,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    fields = out.stdout.decode("utf-8", "replace").split("\0")
    listed = []
    for origin, entry in zip(fields[0::2], fields[1::2]):
        key, _, value = entry.partition("\n")
        if origin.startswith("file:"):
            listed.append((os.path.join(git_dir, origin[len("file:") :]), key, value))
    return listed


def planted_commands(config):
    return sorted({(f, k) for f, k, v in config if runs_command(k, v) and controlled(f) and changed(f)})


def unset(git, origin, key):
    try:
        subprocess.run(
            [git, "config", "--file", origin, "--unset-all", key],
            capture_output=True,
            timeout=GIT_LIST_SECONDS,
            cwd="/",
            env={"PATH": ":".join(PATH_DIRS), "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1"},
        )
    except (OSError, subprocess.SubprocessError):
        pass


git = which("git")
removed_drivers = set()
if git:
    for git_dir, dirs, files in walk_writable():
        if not is_git_dir(git_dir, dirs, files):
            continue
        config = git_config(git, git_dir)
        if config is None:
            if changed(os.path.join(git_dir, "config")):
                # Not graded: what the tests' git would make of it cannot be known.
                reason = "a git repository's config that git cannot read, changed by the agent"
                found.append({"path": os.path.join(git_dir, "config"), "reason": reason, "removed": False})
            continue
        planted = planted_commands(config)
        for origin, key in planted:
            unset(git, origin, key)
        after = git_config(git, git_dir) if planted else config
        left = set(planted) if after is None else set(planted_commands(after))
        for origin, key in planted:
            found.append({"path": origin, "reason": f"git config {key}: git would run a command the agent named", "removed": (origin, key) not in left})
            driver = DRIVER.match(key)
            if driver:
                removed_drivers.add((driver.group(1).lower(), driver.group(2)))
        hooks = os.path.join(git_dir, "hooks")
        for name in entries(hooks):
            path = os.path.join(hooks, name)
            if not name.endswith(".sample") and changed(path):
                report(path, "a git hook the agent wrote (never run: the tests' git has core.hooksPath=/dev/null)", remove=False)
    if removed_drivers:
        for root, _, files in walk_writable():
            for name in files:
                path = os.path.join(root, name)
                if not (name == ".gitattributes" or (name == "attributes" and os.path.basename(root) == "info")) or not changed(path):
                    continue
                try:
                    text = open(path, encoding="utf-8", errors="replace").read(1 << 20)
                except OSError:
                    continue
                named = sorted(
                    f"{kind}={driver}"
                    for kind, driver in removed_drivers
                    if re.search(rf"(^|\s){kind}={re.escape(driver)}(\s|$)", text, re.M)
                )
                if named:
                    report(path, f"git attributes select a driver whose command was removed ({', '.join(named)})", remove=False)

print(json.dumps({"tampering": found, "python": python}))
