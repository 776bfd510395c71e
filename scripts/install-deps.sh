#!/usr/bin/env bash
# Installs what gpt2c builds and tests with, from Debian's packages, only
# where missing.  Everything but the compiler, CMake and OpenMP (part of gcc)
# is optional for the build itself; the tests use all of it.
set -euo pipefail
PKGS=(build-essential cmake pkg-config libjansson-dev libutf8proc-dev libopenblas-dev
      clang libclang-rt-dev libmicrohttpd-dev curl jq libopenmpi-dev openmpi-bin)
[ "${GPT2C_WITH_CHROMIUM:-1}" = 1 ] && PKGS+=(chromium)
missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all present (${PKGS[*]})"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
