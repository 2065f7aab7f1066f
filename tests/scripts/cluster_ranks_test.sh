#!/usr/bin/env bash
# scripts/cluster.sh --ranks: an arbitrary per-rank command in the shaped namespaces. Three ranks
# reach rank 0 over the bridge at {master}; placeholders and QG_* variables are what each rank
# should see; --stats records the launch time and each rank's counters; a failing rank stops the
# others and its exit code is passed on; SIGTERM is forwarded; nothing is left behind.
# Usage: bash tests/scripts/cluster_ranks_test.sh     Exit 77 (CTest: skipped) without root.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cluster="$repo/scripts/cluster.sh"
skip() { echo "cluster_ranks_test: SKIPPED: $*"; exit 77; }
fail() { echo "cluster_ranks_test: FAILED: $*" >&2; exit 1; }

command -v ip >/dev/null && command -v tc >/dev/null || skip "no ip/tc (apt-get install iproute2)"
cap_eff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
(((16#$cap_eff >> 12) & 1 && (16#$cap_eff >> 21) & 1)) || skip "not root: network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN"
prefix="qgr$$x"
subnet="10.214.$(($$ % 250))"
ip netns add "${prefix}probe" 2>/dev/null || skip "cannot create a network namespace here"
ip netns del "${prefix}probe"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
leftovers() {
  ! ip netns list | awk '{print $1}' | grep -q "^${prefix}[0-9]" || fail "namespaces left behind ($1)"
  ! ip link show dev "${prefix}-br" >/dev/null 2>&1 || fail "bridge left behind ($1)"
}

# Rank 0 serves on {addr}:9000 and collects one line from each other rank; every rank writes what it saw.
cat >"$tmp/rank.py" <<'EOF'
import os, socket, sys, time
rank, n, addr, master, iface, out = sys.argv[1:7]
env = [os.environ.get(k, "") for k in ("QG_RANK", "QG_NODES", "QG_ADDR", "QG_MASTER_ADDR", "QG_IFACE")]
got = []
if rank == "0":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((addr, 9000)); s.listen()
    for _ in range(int(n) - 1):
        c, _ = s.accept(); got.append(c.recv(100).decode()); c.close()
else:
    for _ in range(100):
        try:
            c = socket.create_connection((master, 9000), timeout=1); c.sendall(f"hello from {rank}".encode()); c.close(); break
        except OSError:
            time.sleep(0.1)
with open(f"{out}/{rank}.txt", "w") as f:
    f.write(" ".join([rank, n, addr, master, iface] + env + [os.environ.get("QG_LAUNCH_UNIX", "")]) + "\n")
    f.write(";".join(sorted(got)) + "\n")
EOF
rc=0
timeout 60 bash "$cluster" --rate 20mbit --prefix "$prefix" --subnet "$subnet" --stats "$tmp/stats.json" \
  --ranks 3 --log-dir "$tmp/logs" -- python3 "$tmp/rank.py" '{rank}' '{n}' '{addr}' '{master}' '{iface}' "$tmp" \
  >"$tmp/out.txt" 2>&1 || rc=$?
((rc == 0)) || { cat "$tmp/out.txt" "$tmp"/logs/*; fail "cluster.sh --ranks exited $rc"; }
leftovers "after a successful run"
python3 - "$tmp" "$prefix" "$subnet" <<'EOF' || fail "the ranks or --stats are not as expected (above)"
import json, sys
tmp, prefix, subnet = sys.argv[1:]
ok = True
for r in range(3):
    line, got = open(f"{tmp}/{r}.txt").read().splitlines()
    f = line.split()
    want = [str(r), "3", f"{subnet}.{r + 1}", f"{subnet}.1", f"{prefix}-n{r}"]
    if f[:5] != want or f[5:10] != want:
        print(f"rank {r}: saw {f[:10]}, expected {want} twice"); ok = False
    if r == 0 and got != "hello from 1;hello from 2":
        print(f"rank 0 received {got!r}"); ok = False
stats = json.load(open(f"{tmp}/stats.json"))
if stats["n"] != 3 or stats["rate_bits"] != 20000000 or len(stats["ranks"]) != 3:
    print(f"stats: {stats}"); ok = False
if abs(stats["launch_unix_s"] - float(f[10])) > 1e-6:
    print(f"stats launch {stats['launch_unix_s']} != QG_LAUNCH_UNIX {f[10]}"); ok = False
for r in stats["ranks"]:
    if not r["tx_bytes"] or r["tx_bytes"] <= 0 or r["tbf_dropped"] != 0 or r["tbf_sent_bytes"] is None:
        print(f"stats rank {r}"); ok = False
sys.exit(0 if ok else 1)
EOF
echo "cluster_ranks_test: ranks ok"

# A failing rank: its code comes back and the others (sleeping) are stopped at once.
start=$SECONDS
rc=0
timeout 60 bash "$cluster" --prefix "$prefix" --subnet "$subnet" --ranks 3 -- \
  sh -c '[ {rank} = 1 ] && exit 3; sleep 50' >"$tmp/out.txt" 2>&1 || rc=$?
((rc == 3)) || { cat "$tmp/out.txt"; fail "a rank exiting 3: cluster.sh exited $rc"; }
((SECONDS - start < 20)) || fail "the other ranks were not stopped ($((SECONDS - start)) s)"
grep -q "rank 1 exited 3" "$tmp/out.txt" || { cat "$tmp/out.txt"; fail "the failing rank is not named"; }
leftovers "after a failing rank"

# SIGTERM reaches the ranks; the script exits 143 and tears down.
timeout 60 bash "$cluster" --prefix "$prefix" --subnet "$subnet" --ranks 2 -- sleep 50 >"$tmp/out.txt" 2>&1 &
pid=$!
for _ in $(seq 50); do ip netns pids "${prefix}1" 2>/dev/null | grep -q . && break; sleep 0.2; done
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
((rc == 143)) || { cat "$tmp/out.txt"; fail "SIGTERM: cluster.sh exited $rc, expected 143"; }
leftovers "after SIGTERM"
echo "cluster_ranks_test: ok"
