#!/usr/bin/env bash
# Installs the pinned Python packages of scripts/python-requirements.txt into .deps/python (the
# transformers parity tests' reference implementations and real tokenizer files; about 5.6 GB,
# most of it torch's CUDA libraries). Never touches the system's Python: the packages go into a
# folder of the repository, and users put it on PYTHONPATH.
# Idempotent: a stamp holds the sha256 of the pins (the file without its comment lines) it was
# installed from; when it matches, nothing is downloaded. Changed pins reinstall the whole folder
# (a partial install is never left in place: it is built beside it, moved in, and removed when
# pip fails).
# Usage: bash scripts/install-python-deps.sh [DEST]     (default: <repository>/.deps/python)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
requirements="$root/scripts/python-requirements.txt"
dest=${1:-$root/.deps/python}
stamp="$dest/.sluice-requirements.sha256"
# Debian's python3, as install-tools.py: its pip is the python3-pip install-deps.sh installs, and
# the tests run the same interpreter (tests/parity/python_reference.h), so no other will do.
python=/usr/bin/python3
if [[ ! -x "$python" ]]; then
  echo "install-python-deps: $python is missing; run scripts/install-deps.sh first" >&2
  exit 1
fi

# The pins only: a comment edit reinstalls nothing.
want=$(grep -v '^#' "$requirements" | sha256sum | cut -d' ' -f1)
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "install-python-deps: $dest is current"
  exit 0
fi

echo "install-python-deps: installing $(grep -c '==' "$requirements") pinned packages into $dest"
start=$(date +%s)
staging="$dest.partial"
rm -rf "$staging"
mkdir -p "$(dirname "$dest")"
# A failed install leaves no partial folder of gigabytes behind.
trap 'rm -rf "$staging"' EXIT
# --no-deps: the file lists the whole resolved set, so pip resolves nothing itself.
PIP_DISABLE_PIP_VERSION_CHECK=1 "$python" -m pip install --quiet --no-deps --no-cache-dir \
  --target "$staging" -r "$requirements"
echo "$want" > "$staging/.sluice-requirements.sha256"
rm -rf "$dest"
mv "$staging" "$dest"
echo "install-python-deps: done in $(($(date +%s) - start)) s"
