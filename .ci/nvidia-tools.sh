#!/usr/bin/env bash
# NVIDIA's own Nsight Compute (ncu 2024.1.1) and Nsight Systems (nsys 2023.4.4) command-line tools, from
# Debian trixie's non-free component, unpacked (dpkg -x) into one folder and never installed over the
# system. They run without a GPU for what needs none (metric lists per chip, option parsing,
# ncu --import of .ncu-rep, nsys stats/export of .nsys-rep), and the tests in
# tests/test_nvidia_tools.py use them there. Only the *-target packages are fetched (about 140 MB):
# they hold both CLIs and nsys's report scripts; the others hold the GUIs.
# Idempotent: nothing is downloaded when the folder already holds both tools.
# Usage: .ci/nvidia-tools.sh [FOLDER]   (default $GPUPROF_NVIDIA_TOOLS, else /opt/nvidia-debian)
set -euo pipefail
dest="${1:-${GPUPROF_NVIDIA_TOOLS:-/opt/nvidia-debian}}"
lib="$dest/usr/lib/x86_64-linux-gnu"
ncu="$lib/nsight-compute/target/linux-desktop-glibc_2_11_3-x64/ncu"
nsys="$lib/nsight-systems/target-linux-x64/nsys"
if [ -x "$ncu" ] && [ -x "$nsys" ]; then
  echo "ci: NVIDIA tools already in $dest"; exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie non-free" \
  > "$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" update -qq
(cd "$work/debs" && apt-get "${apt_opts[@]}" download nsight-compute-target nsight-systems-target)
mkdir -p "$dest"
for deb in "$work"/debs/*.deb; do dpkg -x "$deb" "$dest"; done
"$ncu" --version | tail -1
"$nsys" --version
echo "ci: ncu at $ncu"
echo "ci: nsys at $nsys"
