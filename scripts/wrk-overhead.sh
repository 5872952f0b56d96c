#!/bin/sh
# scripts/wrk-overhead.sh [ROUNDS] measures with wrk what riskapi's request path costs over
# a bare net/http JSON handler (scripts/wrkfloor), on 127.0.0.1: GET /v1/account of a live
# `riskapi serve` (embedded store, in-process rate limiter) with an enterprise live key,
# against the floor answering an object of the same shape and size. With RISKAPI_REDIS_URL
# set it also runs a second `riskapi serve` that counts rate limits in that Redis and
# measures it against the first.
#
# The targets take turns, ROUNDS (default 3) rounds of WRK_DURATION (default 10s) each, with
# WRK_CONNECTIONS (default 32) connections on WRK_THREADS (default 2) threads, so a load
# that comes and goes on the machine weighs on all alike. For each it prints requests a
# second, the server's CPU time a request (from /proc, user + system), and the answers
# other than 2xx. Compare the rows of one run with each other.
#
# GET /v1/account counts against the platform's 1,000 requests an hour per account
# (docs/platform contract §4): past the first 1,000 of the hour the answers are 429, which
# take the same path (authentication, rate limit, headers, envelope, metrics, access log)
# with the error envelope instead of the account. The "non-2xx" column says how many.
#
# Needs wrk (Debian: apt-get install wrk), go, curl.
set -eu
rounds=${1:-3}
duration=${WRK_DURATION:-10s}
connections=${WRK_CONNECTIONS:-32}
threads=${WRK_THREADS:-2}
command -v wrk >/dev/null || { echo "wrk is not installed (Debian: apt-get install wrk)" >&2; exit 1; }
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
pids=""
cleanup() {
	for pid in $pids; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

go build -o "$tmp/riskapi" ./cmd/riskapi
go build -o "$tmp/wrkfloor" ./scripts/wrkfloor

# start NAME ADDR COMMAND...: runs a server in the background and waits until it answers.
start() {
	name=$1 addr=$2
	shift 2
	"$@" >"$tmp/$name.log" 2>&1 &
	eval "pid_$name=$!"
	pids="$pids $!"
	for _ in $(seq 100); do
		curl -fs -o /dev/null "http://$addr/healthz" 2>/dev/null && return
		curl -fs -o /dev/null "http://$addr/" 2>/dev/null && return
		sleep 0.1
	done
	echo "$name did not start on $addr:" >&2
	cat "$tmp/$name.log" >&2
	exit 1
}

# serve NAME ADDR [REDIS_URL]: a riskapi serve with its own store, an enterprise account and
# a live key (in key_NAME).
serve() {
	name=$1 addr=$2 redis=${3:-}
	data="$tmp/data-$name"
	acct=$("$tmp/riskapi" accounts create --data "$data" --name Bench --email bench@example.test --plan enterprise --json |
		sed -n 's/^  "id": "\(acct_[A-Za-z0-9]*\)",$/\1/p')
	key=$("$tmp/riskapi" keys create --data "$data" --account "$acct" --type live --json |
		sed -n 's/^  "key": "\(sk_live_[A-Za-z0-9]*\)",$/\1/p')
	eval "key_$name=$key"
	RISKAPI_REDIS_URL=$redis start "$name" "$addr" "$tmp/riskapi" serve --data "$data" --addr "$addr"
}

start floor 127.0.0.1:18081 "$tmp/wrkfloor" -addr 127.0.0.1:18081
serve memory 127.0.0.1:18082
targets="floor memory"
if [ -n "${RISKAPI_REDIS_URL:-}" ]; then
	serve redis 127.0.0.1:18083 "$RISKAPI_REDIS_URL"
	targets="$targets redis"
fi

ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run NAME URL [KEY]: one wrk round; appends "NAME requests seconds cpu_ticks non2xx" to results.
run() {
	name=$1 url=$2 key=${3:-}
	eval "pid=\$pid_$name"
	before=$(cpu "$pid")
	if [ -n "$key" ]; then
		wrk -t "$threads" -c "$connections" -d "$duration" -H "Authorization: Bearer $key" "$url" >"$tmp/wrk.out"
	else
		wrk -t "$threads" -c "$connections" -d "$duration" "$url" >"$tmp/wrk.out"
	fi
	after=$(cpu "$pid")
	awk -v name="$name" -v cpu=$((after - before)) '
		/ requests in / { n = $1; s = $4; sub(/s,?$/, "", s) }
		/Non-2xx or 3xx responses:/ { bad = $5 }
		END { print name, n, s, cpu, bad + 0 }' "$tmp/wrk.out" >>"$tmp/results"
}

for round in $(seq "$rounds"); do
	for t in $targets; do
		case $t in
		floor) run floor "http://127.0.0.1:18081/v1/account" ;;
		memory) run memory "http://127.0.0.1:18082/v1/account" "$key_memory" ;;
		redis) run redis "http://127.0.0.1:18083/v1/account" "$key_redis" ;;
		esac
	done
	echo "round $round of $rounds done" >&2
done

echo "wrk -t $threads -c $connections -d $duration, $rounds rounds, $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
awk -v ticks="$ticks" '
	{ n[$1] += $2; s[$1] += $3; cpu[$1] += $4; bad[$1] += $5; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
	END {
		printf "%-8s %12s %14s %10s %8s\n", "target", "req/s", "CPU µs/req", "non-2xx", "ratio"
		for (i = 1; i <= k; i++) {
			t = order[i]; rate[t] = n[t] / s[t]
			base = (t == "redis") ? "memory" : "floor"
			ratio = (t == "floor") ? "" : sprintf("%.2f", rate[t] / rate[base])
			printf "%-8s %12.0f %14.1f %10d %8s\n", t, rate[t], cpu[t] * 1e6 / ticks / n[t], bad[t], ratio
		}
		print "ratio: memory against floor, redis against memory"
	}' "$tmp/results"
