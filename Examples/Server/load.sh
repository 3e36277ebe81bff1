#!/usr/bin/env bash
# The load test: the same app and the same work five ways (values in the RequestContext, one
# bare @TaskLocal, swift-dependencies' withDependencies, a Habitat scope, a Habitat scope bound
# with the logger and the trace context by HabitatRequestMiddleware), one server at a time,
# on loopback only, each run bounded by wrk's duration; variants interleaved within each pass,
# medians over passes. Every response is checked: the member the handler read from its
# environment after an await must be the member whose token was sent.
#
#     bash load.sh            # the full run: release build, 3 passes x 16/128/512 connections x
#                             # 5 variants x 5 s; writes results.tsv and results.svg
#     bash load.sh --smoke    # CI: the debug build, 1 pass, 16 connections, 2 s per variant
#     bash load.sh --passes 5 # the full run with more passes
#     bash load.sh --port 9000  # another loopback port than 18180
#     SWIFT_BUILD_FLAGS="--sanitize=thread --scratch-path .build-tsan" bash load.sh --smoke
#                             # the server from another build (CI: the thread sanitizer's)
#     bash load.sh --postgres   # two more variants on a throwaway PostgreSQL (throwaway_postgres.py):
#                             # habitat-postgres, the member read from the session backend per
#                             # request, and habitat-cached, the same behind each instance's session
#                             # cache (--session-cache, kept coherent by the database's change
#                             # feed); also records the database's CPU and its statements per
#                             # request (pg_stat_statements)
#
# Each run also records the server process's CPU time (user + system, /proc/PID/stat fields 14
# and 15, before and after the measured run) over the requests it answered: CPU per request,
# the figure the load test is judged by (requests/s and p99 move by tens of percent between
# runs on a shared 2-core machine; the work a request costs doesn't). Linux only.
#
# Needs wrk (Debian's package; installed here with apt-get when missing) and python3.
set -euo pipefail
cd "$(dirname "$0")"

passes=3 duration=5 connections="16 128 512" configuration=release smoke=0 port=18180 postgres=0
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) passes=1 duration=2 connections="16" configuration=debug smoke=1; shift ;;
        --passes) passes=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --postgres) postgres=1; shift ;;
        *) echo "usage: bash load.sh [--smoke] [--passes N] [--port PORT] [--postgres]" >&2; exit 2 ;;
    esac
done

if ! command -v wrk > /dev/null; then
    sudo=$([ "$(id -u)" = 0 ] || echo sudo)
    $sudo apt-get update -q > /dev/null && $sudo apt-get install -y -q wrk > /dev/null
fi

# SWIFT_BUILD_FLAGS: more flags for swift build (CI: the thread sanitizer's build directory);
# HABITAT_SERVER: a habitat-server built already (CI).
server=${HABITAT_SERVER:-}
if [ -z "$server" ]; then
    # shellcheck disable=SC2086
    swift build -c "$configuration" ${SWIFT_BUILD_FLAGS:-} --product habitat-server > /dev/null
    # shellcheck disable=SC2086
    server="$(swift build -c "$configuration" ${SWIFT_BUILD_FLAGS:-} --show-bin-path)/habitat-server"
fi
raw=$(mktemp)
ticks=$(getconf CLK_TCK)
# The load-test tokens (`tok-<id>-<secret>`) exist only in the servers this script starts with
# --load-test, on loopback, with a secret of this run's own.
HABITAT_LOAD_TEST_SECRET=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export HABITAT_LOAD_TEST_SECRET
database= cluster=
trap 'rm -f "$raw"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; [ -n "$cluster" ] && python3 throwaway_postgres.py stop "$cluster"; true' EXIT
if [ "$postgres" = 1 ]; then
    read -r database cluster < <(python3 throwaway_postgres.py start)
    psql_bin=$(python3 -c 'import throwaway_postgres as t; print(t.postgres_bin())')/psql
fi

wait_for_port() {
    for _ in $(seq 1 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "load: the server did not start on port $port" >&2
    return 1
}

cpu_ticks() {  # the process's user + system time so far, in clock ticks
    awk '{print $14 + $15}' "/proc/$1/stat"
}

database_ticks() {  # the cluster's processes' user + system time so far, in clock ticks
    [ -n "$cluster" ] || { echo 0; return; }
    local postmaster
    postmaster=$(head -1 "$cluster/data/postmaster.pid")
    { cat "/proc/$postmaster/stat"; for child in $(cat "/proc/$postmaster/task/$postmaster/children"); do cat "/proc/$child/stat" 2>/dev/null; done; } \
        | awk '{ sum += $14 + $15 } END { print sum + 0 }'
}

database_statements() {  # statements the server ran on the sessions' tables so far
    [ -n "$database" ] || { echo 0; return; }
    "$psql_bin" "$database" -tAc "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE '%habitat_%' AND query NOT LIKE '%pg_stat_statements%'"
}

server_mismatches() {  # what the server counted itself (GET /stats)
    timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port
        printf 'GET /stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
        cat <&3" | sed -n 's/.*"mismatches":\([0-9]*\).*/\1/p'
}

variants=(floor tasklocal swift-dependencies habitat habitat-bound)
[ "$postgres" = 1 ] && variants+=(habitat-postgres habitat-cached)
arguments() {  # the server's arguments for a variant
    case $1 in
        habitat-postgres) echo "--load-test --variant habitat-sessions --backend postgres --database $database" ;;
        habitat-cached) echo "--load-test --variant habitat-sessions --backend postgres --database $database --session-cache" ;;
        *) echo "--load-test --variant $1" ;;
    esac
}
echo -e "pass\tvariant\tconnections\trequests_per_s\tp50_ms\tp99_ms\tpeak_rss_mb\trequests\tmismatches\tcpu_us_per_request\tdb_cpu_us_per_request\tqueries_per_request" > "$raw"
for pass in $(seq 1 "$passes"); do
    for c in $connections; do
        # Interleave: each pass starts with a different variant.
        for i in "${!variants[@]}"; do
            variant=${variants[$(( (i + pass - 1) % ${#variants[@]} ))]}
            # shellcheck disable=SC2046
            "$server" $(arguments "$variant") --port "$port" > /dev/null 2>&1 &
            pid=$!
            wait_for_port
            wrk -t 1 -c "$c" -d 1s -s load.lua "http://127.0.0.1:$port/load/me" > /dev/null   # warm-up
            cpu_before=$(cpu_ticks "$pid") db_before=$(database_ticks) statements_before=$(database_statements)
            out=$(wrk -t 1 -c "$c" -d "${duration}s" --timeout 10s -s load.lua "http://127.0.0.1:$port/load/me")
            cpu_after=$(cpu_ticks "$pid") db_after=$(database_ticks) statements_after=$(database_statements)
            rss_kb=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
            on_server=$(server_mismatches)
            [ -n "$on_server" ] || { echo "load: could not read the server's own count (GET /stats)" >&2; exit 1; }
            kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
            rps=$(awk '/^Requests\/sec:/ {print $2}' <<< "$out")
            read -r p50 p99 < <(awk '/^LATENCY/ {printf "%.3f %.3f\n", $3 / 1000, $5 / 1000}' <<< "$out")
            read -r checked mismatched < <(awk '/^CHECKED/ {print $2, $4}' <<< "$out")
            errors=$(awk '/^REQUESTS/ {print $4}' <<< "$out")
            mismatches=$(( mismatched + on_server + errors ))
            per_request() { awk "BEGIN {printf \"%.2f\", ($1) / ($checked > 0 ? $checked : 1)}"; }
            cpu=$(per_request "($cpu_after - $cpu_before) / $ticks * 1000000")
            db_cpu=$(per_request "($db_after - $db_before) / $ticks * 1000000")
            queries=$(per_request "$statements_after - $statements_before")
            case $variant in habitat-postgres|habitat-cached) ;; *) db_cpu=0 queries=0 ;; esac
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$pass" "$variant" "$c" "$rps" "$p50" "$p99" \
                "$(awk "BEGIN {printf \"%.1f\", $rss_kb / 1024}")" "$checked" "$mismatches" "$cpu" "$db_cpu" "$queries" >> "$raw"
            printf 'pass %s  %-18s c=%-4s %10s req/s  p50 %6s ms  p99 %7s ms  %s us CPU/request (database %s, %s queries)  %s checked, %s mismatched\n' \
                "$pass" "$variant" "$c" "$rps" "$p50" "$p99" "$cpu" "$db_cpu" "$queries" "$checked" "$mismatches"
        done
    done
done

# GET /load/me during a sign-in flood: 8 clients sign in as unknown names all the while (each a
# password hash; past the hashing pool's queue, a 503 at once), beside the same run without
# them, on the habitat variant. The hashes run on threads of their own, so reads go on.
c=${connections%% *}
"$server" --load-test --variant habitat --port "$port" > /dev/null 2>&1 &
pid=$!
wait_for_port
wrk -t 1 -c "$c" -d 1s -s load.lua "http://127.0.0.1:$port/load/me" > /dev/null   # warm-up
quiet=$(wrk -t 1 -c "$c" -d "${duration}s" --timeout 10s -s load.lua "http://127.0.0.1:$port/load/me")
flood_out=$(mktemp)
wrk -t 1 -c 8 -d "$((duration + 2))s" --timeout 10s -s flood.lua "http://127.0.0.1:$port/signin" > "$flood_out" &
flood=$!
sleep 1
loud=$(wrk -t 1 -c "$c" -d "${duration}s" --timeout 10s -s load.lua "http://127.0.0.1:$port/load/me")
wait "$flood" || true
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
quiet_p99=$(awk '/^LATENCY/ {printf "%.3f", $5 / 1000}' <<< "$quiet")
loud_p99=$(awk '/^LATENCY/ {printf "%.3f", $5 / 1000}' <<< "$loud")
loud_errors=$(awk '/^REQUESTS/ {print $4}' <<< "$loud")
signins=$(awk '/requests in/ {print $1}' "$flood_out")
rm -f "$flood_out"
printf 'sign-in flood      c=%-4s GET /load/me p99 %7s ms during 8 clients signing in (%s sign-ins), %7s ms without; %s reads failed\n' \
    "$c" "$loud_p99" "$signins" "$quiet_p99" "$loud_errors"
[ "$loud_errors" = 0 ] || { echo "load: reads failed during the sign-in flood" >&2; exit 1; }

if [ "$smoke" = 1 ]; then
    python3 summarize.py "$raw" > /dev/null
else
    python3 summarize.py "$raw" results.tsv results.svg "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
fi
