#!/bin/bash
set -e
cd /app/notes

# What does main hold now?
git log --oneline

# The reflog still knows the lost commit.
git reflog

# Find the commit that added deploy.md.
git log -g --oneline -- deploy.md

# Move main back to it.
git reset --hard 'HEAD@{1}'

git show --stat HEAD
