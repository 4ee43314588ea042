#!/usr/bin/env bash
# End-to-end scheduling as a fraction of the API server's limit: each round
# runs `wasmsched bench --e2e ... --null` and then the same command
# scheduling, with the same binary, and takes the ratio of their pods/s.
# With several binaries, each round runs each of them in turn (the order
# alternating from round to round, so a drift in the machine's speed
# favours none). Prints a row per run and, per binary, the median ratio
# and the median daemon CPU a pod above `--null`.
#
#   scripts/bench-e2e-ratio.sh [ROUNDS] [BINARY...]   # ROUNDS: 6; BINARY: this tree's release build
#   BENCH_E2E_ARGS="--nodes 5000 --pods 10000" scripts/bench-e2e-ratio.sh 6
#
# One round on a shared two-core machine swings by a third; compare
# medians of many rounds, never single runs.
set -euo pipefail

rounds=${1:-6}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
bins=("$@")
if (( ${#bins[@]} == 0 )); then
    target=${CARGO_TARGET_DIR:-$HOME/.cache/wasmsched/target}
    (cd "$root" && CARGO_TARGET_DIR=$target cargo build --release --locked -q -p wasmsched)
    bins=("$target/release/wasmsched")
fi
read -r -a args <<<"${BENCH_E2E_ARGS:---nodes 1000 --pods 5000}"

python3 - "$rounds" "${#bins[@]}" "${bins[@]}" "${args[@]}" <<'PY'
import json, statistics, subprocess, sys

rounds, n = int(sys.argv[1]), int(sys.argv[2])
bins, args = sys.argv[3:3 + n], sys.argv[3 + n:]

def run(b, null):
    cmd = [b, "bench", "--e2e", *args, "--json"] + (["--null"] if null else [])
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])

print(f"`wasmsched bench --e2e {' '.join(args)} --json [--null]`, {rounds} rounds")
print()
print("| round | binary | --null pods/s | pods/s | ratio | daemon CPU a pod, --null / scheduling (ms) | events at the last binding |")
print("|---|---|---|---|---|---|---|")
res = {b: [] for b in bins}
for r in range(rounds):
    for b in (bins if r % 2 == 0 else bins[::-1]):
        lim, real = run(b, True), run(b, False)
        ratio = real["pods_per_sec"] / lim["pods_per_sec"]
        res[b].append((ratio, real["daemon_cpu_ms_per_pod"] - lim["daemon_cpu_ms_per_pod"]))
        print(f"| {r + 1} | {b} | {lim['pods_per_sec']:.0f} | {real['pods_per_sec']:.0f} | {ratio:.3f} "
              f"| {lim['daemon_cpu_ms_per_pod']} / {real['daemon_cpu_ms_per_pod']} "
              f"| {real['events_at_last_bind']} of {real['bound']} |", flush=True)
print()
for b, v in res.items():
    print(f"{b}: median ratio {statistics.median(x[0] for x in v):.3f}, "
          f"daemon CPU a pod above --null {statistics.median(x[1] for x in v):.3f} ms")
PY
