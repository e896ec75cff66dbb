#!/usr/bin/env bash
# Slurm, munge and accounting (slurmdbd + MariaDB) for the cluster sweep test (tests/test_slurm_sweep.py).
# Installing starts no daemon: tests/slurm_cluster.py starts a private one-node cluster itself.
# Needs root and apt-get; the test skips with the reason when these programs are missing.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || true
apt-get install -y -qq --no-install-recommends slurm-wlm munge slurmdbd mariadb-server >/dev/null
