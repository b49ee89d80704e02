#!/usr/bin/env bash
# Debian's Slurm and MUNGE for the tests' one-node cluster (tests/support/slurm_cluster.py, started and stopped by the
# tests; nothing is configured or started here). Instant when the binaries are there; else installed with apt-get,
# which needs root.
set -euo pipefail
NEEDED=(munged slurmctld slurmd sbatch scontrol scancel sinfo)
missing=()
for tool in "${NEEDED[@]}"; do
	PATH="$PATH:/usr/sbin:/sbin" command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "setup-slurm: ${missing[*]} missing, and installing them needs root: run 'sudo apt-get install -y slurmctld slurmd munge' (the Slurm tests run their cluster as root), or make test as root" >&2
	exit 1
fi
echo "setup-slurm: installing slurmctld, slurmd, munge (missing: ${missing[*]})"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q slurmctld slurmd munge >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q slurmctld slurmd munge >/dev/null; }
# the packages' own services are not used: the tests start their daemons with their own configuration
