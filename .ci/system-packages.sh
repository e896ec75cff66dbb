#!/usr/bin/env bash
# Debian packages some tests use when present (they skip with a reason otherwise).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
bash .ci/install-slurm.sh
