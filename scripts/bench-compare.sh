#!/usr/bin/env bash
# Compares the engine of a revision with the working tree: builds both in
# release (the revision in a worktree, with a target directory shared
# between runs so only the workspace crates recompile), then runs the same
# `wasmsched bench` commands alternated, pair by pair, and prints each run
# and the median ratios new / old of pods/s and of peak RSS.
#
#   scripts/bench-compare.sh REV [PAIRS]        # PAIRS: 5 by default
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
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

sha=$(git -C "$root" rev-parse --short "$rev")
echo "building $rev ($sha) and the working tree (release)" >&2
git -C "$root" worktree add --detach "$work/old" "$sha" >/dev/null
(cd "$work/old" && CARGO_TARGET_DIR=$old_target cargo build --release --locked -q -p wasmsched)
cp "$old_target/release/wasmsched" "$work/wasmsched-old"
(cd "$root" && CARGO_TARGET_DIR=$target cargo build --release --locked -q -p wasmsched)
cp "$target/release/wasmsched" "$work/wasmsched-new"

commands=(
    "bench --nodes 5000 --pods 5000 --percentage 100 --json"
    "bench --nodes 5000 --pods 10000 --json"
)

# The last line of `bench --json` is one JSON object.
field() { tail -n 1 | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
median() { python3 -c "import statistics,sys; print(round(statistics.median(float(x) for x in sys.argv[1:]), 3))" "$@"; }

echo "wasmsched bench: $sha (old) against the working tree (new), $pairs alternated pairs"
for cmd in "${commands[@]}"; do
    ratios=() rss_ratios=()
    echo
    echo "\`wasmsched $cmd\`"
    echo "| pair | old pods/s | new pods/s | new / old | old RSS MB | new RSS MB |"
    echo "|---|---|---|---|---|---|"
    for i in $(seq 1 "$pairs"); do
        # Alternate which runs first, so a drift in the machine's speed
        # does not favour one side.
        if (( i % 2 )); then
            old=$("$work/wasmsched-old" $cmd 2>/dev/null)
            new=$("$work/wasmsched-new" $cmd 2>/dev/null)
        else
            new=$("$work/wasmsched-new" $cmd 2>/dev/null)
            old=$("$work/wasmsched-old" $cmd 2>/dev/null)
        fi
        op=$(field pods_per_sec <<<"$old") np=$(field pods_per_sec <<<"$new")
        orss=$(field peak_rss_mb <<<"$old") nrss=$(field peak_rss_mb <<<"$new")
        r=$(python3 -c "print(round($np / $op, 3))")
        ratios+=("$r")
        rss_ratios+=("$(python3 -c "print(round($nrss / $orss, 3))")")
        echo "| $i | $op | $np | $r | $orss | $nrss |"
    done
    echo "median new / old: pods/s $(median "${ratios[@]}"), peak RSS $(median "${rss_ratios[@]}")"
done
