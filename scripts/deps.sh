#!/usr/bin/env bash
# Installs the Debian 12 packages the build needs, only those missing (apt-get update only then).
# CUDA is not a package here: the build uses /usr/local/cuda when it is there.
set -euo pipefail

packages=(g++ cmake ninja-build libtbb-dev libopenblas-dev liblapacke-dev libspdlog-dev
          doctest-dev libcli11-dev python3)

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
