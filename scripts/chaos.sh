#!/usr/bin/env bash
# Runs the contract property tests (and the hand-overs' properties at 8 and 16 threads) under schedule chaos, one
# process per seed, with the lock-order checker trapping.
# Usage: scripts/chaos.sh FIRST_SEED LAST_SEED [ROUND_FACTOR] [MINUTES]
#   Each seed is one `swift test` of those suites with CONCURRENCYKIT_CHAOS=<seed>: the library's
#   synchronization points yield or pause at random, reproducibly for the seed, and the tests' own random work uses
#   the same seed. ROUND_FACTOR multiplies every test's rounds (CONCURRENCYKIT_PROPERTY_ROUNDS, default 1). The run
#   stops starting seeds after MINUTES (default: no limit) and each seed has 10 minutes at most (scripts/stage.sh,
#   which then names the tests still running and ends the seed's whole process group). A failure prints
#   its seed and the filter that replays it.
set -uo pipefail
cd "$(dirname "$0")/.."
first=$1 last=$2 factor=${3:-1} minutes=${4:-0}
export CONCURRENCYKIT_LOCK_ORDER=trap CONCURRENCYKIT_PROPERTY_ROUNDS=$factor SWIFT_BACKTRACE=enable=no
swift build --build-tests -Xswiftc -warnings-as-errors >/dev/null || exit 1
# The contract properties, and the properties of the hand-overs that run them at 8 and 16 threads (issue 26); the
# release stage of `make test` runs them too.
suites=$(cat scripts/property-suites.txt)
start=$SECONDS failed=() ran=0
for seed in $(seq "$first" "$last"); do
    if [ "$minutes" -gt 0 ] && [ $((SECONDS - start)) -ge $((minutes * 60)) ]; then
        echo "chaos: time is up after $ran seeds"
        break
    fi
    log=$(mktemp)
    if CONCURRENCYKIT_CHAOS=$seed scripts/stage.sh "chaos seed $seed" 600 swift test --skip-build \
        -Xswiftc -warnings-as-errors --filter "$suites" >"$log" 2>&1; then
        echo "chaos: seed $seed passed ($(grep -o 'Test run with [0-9]* tests' "$log" | head -1))"
    else
        echo "chaos: seed $seed FAILED; replay with CONCURRENCYKIT_CHAOS=$seed CONCURRENCYKIT_LOCK_ORDER=trap" \
            "swift test --filter '$suites'"
        grep -E "✘|↳ contract|ConcurrencyKit:|Fatal error|crashed" "$log" | head -20
        # What a seed that ran out of time was still running (scripts/stage.sh's report).
        sed -n '/^stage chaos seed .*: out of time/,$p' "$log" | head -30
        failed+=("$seed")
    fi
    rm -f "$log"
    ran=$((ran + 1))
done
passed=$((ran - ${#failed[@]}))
echo "chaos: $passed passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
