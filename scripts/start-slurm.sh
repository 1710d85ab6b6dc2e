#!/usr/bin/env bash
# Starts a real one-node Slurm cluster on this machine, for the tests of probe's Slurm client
# (test/slurm.test.ts) and for trying `probe watch --slurm` by hand. CI machines have no init
# system, so the daemons are started directly: munged (Slurm's authentication), slurmctld
# (the controller) and slurmd (this machine as the one compute node). Run as root; Debian's
# packages: `apt-get install slurm-wlm munge`.
#
# Idempotent: where the cluster already answers with its node up, it says so and exits 0.
# Where it cannot start (not root, packages missing, a daemon that does not come up) it
# prints one line (and the daemon's log) and exits non-zero.
#
# To stop the cluster: `scontrol shutdown` (stops slurmctld and slurmd), then
# `kill "$(cat /run/munge/munged.pid)"`. State (jobs, job ids) stays under
# /var/spool/slurmctld; `rm -rf /var/spool/slurmctld /var/spool/slurmd` forgets it.
#
# This is a test cluster: no accounting database (probe reads job state with squeue and
# scontrol, never sacct), SlurmUser=root, no cgroups (proctrack/linuxproc, task/none: they
# work inside containers and gVisor, where cgroup plugins do not). Three partitions on the
# one node: debug (the default), and scavenger and urgent, where a job in urgent pre-empts
# (cancels) one in scavenger, for the test of a pre-empted job.
set -euo pipefail

fail() {
  echo "start-slurm: $*" >&2
  exit 1
}

[ "${EUID:-$(id -u)}" = 0 ] || fail "must run as root (it writes /etc/slurm and starts the daemons)"
for cmd in munge munged slurmctld slurmd sinfo sbatch scontrol; do
  command -v "$cmd" >/dev/null 2>&1 || fail "$cmd not found: install Debian's slurm-wlm and munge (apt-get install slurm-wlm munge)"
done

node="$(hostname -s)"

# The node's state as the controller sees it (idle, mix, alloc, down, …); empty where no
# controller answers (sinfo then fails within seconds).
node_state() { timeout 10 sinfo -h -n "$node" -o '%t' 2>/dev/null | head -1; }

# Whether the daemon whose pid file is $2 runs as $1. Not pgrep: a daemon killed with a
# previous session can linger as a zombie where nothing reaps orphans, and pgrep lists it.
running() {
  local pid
  pid="$(cat "$2" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] &&
    ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null
}

# The node answers and takes jobs: nothing to do. (The controller keeps a node idle for
# SlurmdTimeout after its slurmd died, so slurmd itself is checked too.)
# sinfo is asked only where slurmctld runs: with none, it retries for 10 s before failing.
# A cluster started by an older version of this script (another slurm.conf) is configured again.
CONF_VERSION="probe start-slurm.sh conf 2"
if running slurmctld /run/slurm/slurmctld.pid && running slurmd /run/slurm/slurmd.pid &&
  grep -qF "$CONF_VERSION" /etc/slurm/slurm.conf 2>/dev/null; then
  case "$(node_state)" in
    idle | mix | alloc)
      echo "slurm is already up (node $node $(node_state))"
      exit 0
      ;;
  esac
fi

# --- munge: the shared key Slurm's daemons and commands sign their messages with ---------
# Debian's package creates the key; a machine without one gets a fresh random key. munged
# refuses a key readable by others or owned by another user.
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
fi
chown munge:munge /etc/munge /etc/munge/munge.key
chmod 0700 /etc/munge
chmod 0400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
chmod 0755 /run/munge

if ! munge -n </dev/null >/dev/null 2>&1; then
  # A munged killed with a previous session leaves its socket and pid file behind, which a
  # new one refuses to replace without --force.
  runuser -u munge -- /usr/sbin/munged --force
  for _ in $(seq 1 20); do
    munge -n </dev/null >/dev/null 2>&1 && break
    sleep 0.5
  done
  munge -n </dev/null >/dev/null 2>&1 || fail "munged did not start: $(tail -3 /var/log/munge/munged.log 2>/dev/null | tr '\n' ' ')"
fi

# --- slurm.conf: one node (this machine), one partition ----------------------------------
# CPUs from nproc; RealMemory a tenth under what is available now, since slurmd drains a
# node that has less memory than slurm.conf claims.
cpus="$(nproc)"
available_mb="$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)"
memory_mb=$((available_mb * 9 / 10))
# cons_tres with CR_Core_Memory lets several 1-CPU jobs run side by side; a job that asks no
# memory gets DefMemPerCPU (an even share) instead of the whole node, which would serialise them.
mem_per_cpu=$((memory_mb / cpus))

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/slurm
cat >/etc/slurm/slurm.conf <<EOF
# Written by probe's scripts/start-slurm.sh: a one-node test cluster ($CONF_VERSION).
ClusterName=probe
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
# No cgroups: these plugins work in containers and gVisor.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
# No accounting database: job state is read with squeue and scontrol.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# No mail on these machines (slurmctld logs an error for a MailProg that is missing).
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$mem_per_cpu
# A node that was down (a previous session's slurmd killed) comes back when it registers.
ReturnToService=2
# scontrol still knows a finished job for 10 minutes after it ends.
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
# Pre-emption by partition priority, for the test of a pre-empted job (test/slurm.test.ts): a
# job in partition urgent cancels (PREEMPTED) jobs in partition scavenger whose CPUs it
# needs. Jobs in debug, where every other test runs, are never pre-empted.
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
NodeName=$node CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=OFF
PartitionName=scavenger Nodes=$node MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=CANCEL
PartitionName=urgent Nodes=$node MaxTime=INFINITE State=UP PriorityTier=2 PreemptMode=OFF
EOF

# --- the daemons -------------------------------------------------------------------------
# Daemons of a previous session may still run with an older slurm.conf (or half-started):
# ask them to reread it, else start them. Each daemonizes itself.
if running slurmctld /run/slurm/slurmctld.pid; then
  scontrol reconfigure >/dev/null 2>&1 || true
else
  rm -f /run/slurm/slurmctld.pid
  slurmctld || fail "slurmctld did not start: $(tail -3 /var/log/slurm/slurmctld.log 2>/dev/null | tr '\n' ' ')"
fi
if ! running slurmd /run/slurm/slurmd.pid; then
  rm -f /run/slurm/slurmd.pid
  slurmd || fail "slurmd did not start: $(tail -3 /var/log/slurm/slurmd.log 2>/dev/null | tr '\n' ' ')"
fi

# slurmd registers with the controller within a few seconds; the node is then idle.
state=""
for _ in $(seq 1 60); do
  state="$(node_state)"
  case "$state" in idle | mix | alloc) break ;; esac
  sleep 1
done
case "$state" in
  idle | mix | alloc) ;;
  *)
    echo "start-slurm: node $node did not come up (state: ${state:-no answer}); the logs:" >&2
    tail -20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
    exit 1
    ;;
esac

# One job end to end: submitted, run on the node, finished with exit code 0.
if ! timeout 60 sbatch --wait --quiet --output=/dev/null --wrap true; then
  echo "start-slurm: a trivial job (sbatch --wait --wrap true) did not complete; the logs:" >&2
  tail -20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
  exit 1
fi
echo "slurm is up: node $node ($cpus CPUs, ${memory_mb} MB), partition debug"
