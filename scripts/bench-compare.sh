#!/usr/bin/env bash
# Compares the engine of a revision with the working tree: builds both in
# release (the revision in a worktree, with a target directory shared
# between runs so only the workspace crates recompile), then runs the same
# `wasmsched bench` commands alternated, pair by pair, and prints each run
# and the median ratios new / old of pods/s, of peak RSS and of the CPU time
# a run takes (the same pods: less is better).
#
#   scripts/bench-compare.sh REV [PAIRS]        # PAIRS: 5 by default
#   BENCH_COMMANDS=$'bench ... --json\nbench ... --json' scripts/bench-compare.sh REV
#
# Use it before a change that touches a hot path, and put its output in
# the commit or in docs/benchmarks.md. Only ratios mean anything: the
# machine's speed changes from day to day, not within a run.
set -euo pipefail

rev=${1:?usage: scripts/bench-compare.sh REV [PAIRS]}
pairs=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$HOME/.cache/wasmsched/target}
old_target=${BENCH_COMPARE_TARGET:-$HOME/.cache/wasmsched/bench-compare-target}
# One target directory for both would compare a build with itself: cargo
# hashes a workspace's crates by their paths inside it, so the two trees
# share artifacts, and the second build finds the first one's fresh.
if [[ "$(realpath -m "$old_target")" == "$(realpath -m "$target")" ]]; then
    echo "bench-compare: BENCH_COMPARE_TARGET must not be the target directory ($target)" >&2
    exit 2
fi
work=$(mktemp -d)
# The revision's worktree stays at one path between runs: cargo then finds
# its build up to date instead of compiling the workspace again.
# It is kept (a checkout of another revision there changes only the files
# that differ).
old_src=$(dirname "$old_target")/bench-compare-src
trap 'rm -rf "$work"' EXIT

sha=$(git -C "$root" rev-parse --short "$rev")
echo "building $rev ($sha) and the working tree (release)" >&2
if git -C "$old_src" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$old_src" checkout -q --detach "$sha"
else
    rm -rf "$old_src"
    git -C "$root" worktree prune
    git -C "$root" worktree add --detach "$old_src" "$sha" >/dev/null
fi
(cd "$old_src" && CARGO_TARGET_DIR=$old_target cargo build --release --locked -q -p wasmsched)
cp "$old_target/release/wasmsched" "$work/wasmsched-old"
(cd "$root" && CARGO_TARGET_DIR=$target cargo build --release --locked -q -p wasmsched)
cp "$target/release/wasmsched" "$work/wasmsched-new"

commands=(
    "bench --nodes 5000 --pods 5000 --percentage 100 --json"
    "bench --nodes 5000 --pods 10000 --json"
)
# Other commands, one per line: BENCH_COMMANDS=$'bench --nodes 50000 --pods 10000 --json'
if [[ -n "${BENCH_COMMANDS:-}" ]]; then
    mapfile -t commands <<<"$BENCH_COMMANDS"
fi

# The last line of `bench --json` is one JSON object.
field() { tail -n 1 | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
# Runs a bench command and prints its JSON with the CPU seconds (user and
# system) the run took added as `cpu_s`: on a shared machine whose speed
# drifts, the work a run needs is a steadier measure than its wall time.
run() {
    python3 - "$@" <<'PY'
import json, resource, subprocess, sys
out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout
d = json.loads(out.strip().splitlines()[-1])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
d["cpu_s"] = round(r.ru_utime + r.ru_stime, 2)
print(json.dumps(d))
PY
}
median() { python3 -c "import statistics,sys; print(round(statistics.median(float(x) for x in sys.argv[1:]), 3))" "$@"; }

echo "wasmsched bench: $sha (old) against the working tree (new), $pairs alternated pairs"
for cmd in "${commands[@]}"; do
    ratios=() rss_ratios=() cpu_ratios=()
    echo
    echo "\`wasmsched $cmd\`"
    echo "| pair | old pods/s | new pods/s | new / old | old RSS MB | new RSS MB | old CPU s | new CPU s |"
    echo "|---|---|---|---|---|---|---|---|"
    for i in $(seq 1 "$pairs"); do
        # Alternate which runs first, so a drift in the machine's speed
        # does not favour one side.
        if (( i % 2 )); then
            old=$(run "$work/wasmsched-old" $cmd)
            new=$(run "$work/wasmsched-new" $cmd)
        else
            new=$(run "$work/wasmsched-new" $cmd)
            old=$(run "$work/wasmsched-old" $cmd)
        fi
        op=$(field pods_per_sec <<<"$old") np=$(field pods_per_sec <<<"$new")
        orss=$(field peak_rss_mb <<<"$old") nrss=$(field peak_rss_mb <<<"$new")
        r=$(python3 -c "print(round($np / $op, 3))")
        ratios+=("$r")
        rss_ratios+=("$(python3 -c "print(round($nrss / $orss, 3))")")
        ocpu=$(field cpu_s <<<"$old") ncpu=$(field cpu_s <<<"$new")
        cpu_ratios+=("$(python3 -c "print(round($ncpu / $ocpu, 3))")")
        echo "| $i | $op | $np | $r | $orss | $nrss | $ocpu | $ncpu |"
    done
    echo "median new / old: pods/s $(median "${ratios[@]}"), peak RSS $(median "${rss_ratios[@]}"), CPU per run $(median "${cpu_ratios[@]}")"
done
