#!/usr/bin/env bash
# Runs one stage of the gate with a time limit, in a process group of its own.
# Usage: scripts/stage.sh NAME SECONDS COMMAND [ARGUMENTS...]
#   The command runs as the leader of a new process group, its output passing through. When it has run SECONDS,
#   or when this script is itself ended (an outer `timeout`, Ctrl-C, a CI job's cancel), the stage prints what was
#   still running (the tests that started and had not ended, from Swift Testing's "◇ Test ... started." lines, and
#   the processes of the stage) and ends every process of the stage: TERM, then KILL after STAGE_GRACE seconds
#   (default 10). A process the command started in a group of its own is found as a descendant and ended too.
#   Exit status: the command's, 124 when the stage ran out of time, 128+N when ended by signal N.
#   STAGE_LIMIT_FACTOR multiplies every limit (default 1), for a machine slower than CI's two cores.
#   With STAGE_SUMMARY set to a file, the stage adds one line to it as it ends: its name, passed or FAILED, and its
#   time (`make test` prints them all at its end).
set -uo pipefail
name=$1 limit=$2
shift 2
factor=${STAGE_LIMIT_FACTOR:-1}
limit=$((limit * factor))
grace=${STAGE_GRACE:-10}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# The output passes through, and is kept for the report; tee is this script's, not the stage's.
exec 3> >(tee "$log")
tee_pid=$!
# Without job control a background job stays in this script's process group, so setsid makes the command the
# leader of a new one without forking: its pid is the group's id.
setsid "$@" >&3 2>&1 3>&- &
leader=$!

# Every live process of the stage: the members of its group, and their descendants wherever they are (an ended
# process that its parent has not collected yet, a zombie, is not one).
stage_processes() {
    ps -e -o pid=,ppid=,pgid=,stat= | awk -v group="$leader" '
        $4 ~ /^Z/ { next }
        { parent[$1] = $2; inGroup[$1] = ($3 == group) }
        END {
            for (pid in parent) if (inGroup[pid]) keep[pid] = 1
            do {
                grew = 0
                for (pid in parent) if (!(pid in keep) && (parent[pid] in keep)) { keep[pid] = 1; grew = 1 }
            } while (grew)
            for (pid in keep) print pid
        }'
}

# The tests that started and had not ended, from the stage's output so far.
running_tests() {
    sed -n -E '/◇ Test (run|case) /d; s/^.*◇ Test (.*) started\.$/started\t\1/p;
        s/ with [0-9]+ test cases? (passed|failed) / \1 /; s/^.*[✔✘➜] Test (.*) (passed|failed|skipped)( after .*|\.)$/ended\t\1/p' "$log" |
        awk -F '\t' '$1 == "started" { open[$2] = 1; order[++n] = $2 } $1 == "ended" { delete open[$2] }
            END { for (i = 1; i <= n; i++) if (order[i] in open) { print "  " order[i]; delete open[order[i]] } }'
}

report() {
    echo "stage $name: $1; still running:" >&2
    local tests
    tests=$(running_tests)
    if [ -n "$tests" ]; then
        echo "stage $name: $(echo "$tests" | wc -l) tests started and not ended:" >&2
        echo "$tests" >&2
    fi
    local pids
    pids=$(stage_processes | paste -sd, -)
    if [ -n "$pids" ]; then ps -o pid,pgid,etime,time,args -p "$pids" | cut -c1-200 >&2; fi
}

# Lets tee write the last of the output before this script exits, then adds the stage's line to STAGE_SUMMARY.
finish_output() {
    exec 3>&-
    wait "$tee_pid" 2>/dev/null
    local verdict="passed"
    [ "${1:-0}" -eq 0 ] || verdict="FAILED (status $1)"
    [ -n "${STAGE_SUMMARY:-}" ] && printf '  %-34s %-20s %5d s\n' "$name" "$verdict" "$SECONDS" >>"$STAGE_SUMMARY"
    return 0
}

# TERM to the group and to every descendant, then KILL to whatever is left after the grace period.
end_stage() {
    local pids
    pids=$(stage_processes)
    kill -TERM -- "-$leader" 2>/dev/null
    [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
    for _ in $(seq $((grace * 10))); do
        pids=$(stage_processes)
        [ -z "$pids" ] && return
        sleep 0.1
    done
    echo "stage $name: still there after ${grace} s, killing: $(echo $pids)" >&2
    kill -KILL -- "-$leader" 2>/dev/null
    kill -KILL $pids 2>/dev/null
}

on_signal() {
    report "ended by SIG$1 after $SECONDS s"
    end_stage
    finish_output $((128 + $2))
    exit $((128 + $2))
}
trap 'on_signal TERM 15' TERM
trap 'on_signal INT 2' INT
trap 'on_signal HUP 1' HUP

# Whether the command still runs: an ended one stays a zombie, which `kill -0` still finds, until it is waited for.
running() {
    local state
    state=$(ps -o stat= -p "$leader" 2>/dev/null) && [ "${state#Z}" = "$state" ]
}

# Sleep in the background and wait for it, so that a signal to this script is handled at once.
while running; do
    if [ "$SECONDS" -ge "$limit" ]; then
        report "out of time after $limit s"
        end_stage
        finish_output 124
        echo "stage $name: FAILED: over its time limit of $limit s (scripts/stage.sh; STAGE_LIMIT_FACTOR scales it)" >&2
        exit 124
    fi
    sleep 1 &
    wait $!
done
wait "$leader"
status=$?
# The command is done; anything it left behind in its group must not outlive the stage.
if [ -n "$(stage_processes)" ]; then
    report "the command ended (status $status) leaving processes behind"
    end_stage
fi
finish_output "$status"
exit "$status"
