#!/bin/sh
# Re-apply issue 28 on a newer main:  sh reapply.sh WORKTREE BRANCH [BASE]
#   makes BRANCH from BASE (default main) in a new worktree WORKTREE, runs the restructure
#   program there, commits its result as one "moves only" commit, then applies the hand-edit
#   patches (git am -3: a conflict stops it; fix by hand, `git add`, `git am --continue`).
# Needs a venv with ruff at WORKTREE/.venv (a link to another worktree's .venv will do: the
# program formats the files it changed with it).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
WT=$1; BR=$2; BASE=${3:-main}
REPO=${REPO:-$(git rev-parse --show-toplevel)}
git -C "$REPO" worktree add -q -b "$BR" "$WT" "$BASE"
[ -e "$WT/.venv" ] || [ -z "${VENV:-}" ] || ln -s "$VENV" "$WT/.venv"
cd "$WT"
python3 "$HERE/restructure.py" .
git add -A -- . ':(exclude).venv'
python3 "$HERE/restructure.py" --message | git commit -q -F -
git am -3 -q "$HERE"/patches/*.patch
git log --oneline "$BASE"..HEAD
