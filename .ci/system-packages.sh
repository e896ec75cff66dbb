#!/usr/bin/env bash
# Debian packages some tests use when present (they skip with the reason otherwise):
# Chromium for the HTML report screenshot test, Slurm + MariaDB for the cluster sweep test, NVIDIA's
# ncu and nsys command-line tools (unpacked into a folder, not installed) for tests/test_nvidia_tools.py.
# Each group is installed on its own, so one failing does not cost the other.
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || echo "ci: apt-get update failed"
apt-get install -y -qq --no-install-recommends chromium >/dev/null \
  || echo "ci: chromium not installed; the browser test will skip"
bash "$(dirname "$0")/install-slurm.sh" \
  || echo "ci: Slurm not installed; the cluster tests will skip"
bash "$(dirname "$0")/nvidia-tools.sh" \
  || echo "ci: NVIDIA ncu/nsys not unpacked; tests/test_nvidia_tools.py will skip"
