import subprocess

REPO = "/app/notes"
CONTENT = "Release checklist\n\n1. Tag the release.\n2. Build the images.\n3. Roll out to canary, then to everyone.\n"


def git(*args):
    return subprocess.run(["git", "-C", REPO, "-c", "safe.directory=*", *args], capture_output=True, text=True, timeout=30)


def test_main_has_the_file():
    shown = git("show", "main:deploy.md")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == CONTENT


def test_tree_clean():
    status = git("status", "--porcelain")
    assert status.returncode == 0, status.stderr
    assert status.stdout == ""


def test_readme_kept():
    assert git("show", "main:README.md").stdout == "# Notes\n"
