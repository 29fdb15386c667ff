#!/usr/bin/env bash
# The soak of issue 33 (not part of `make test`): starts `tensorfold serve` on the default model with
# --parallel P and runs scripts/load_test.py against it for DURATION seconds with 4 x P clients: streaming and
# non-streaming (half each among the clients that stay), a third disconnecting at random moments, the
# server's resident memory, open fds and threads sampled each minute. Passes when no reply differs from its
# solo run, no 5xx, no hang, the server drains and its memory returns within 5% of the warm idle level.
#
#   scripts/soak.sh [--bin build/tensorfold] [--parallel 4] [--duration 1800] [--port 18600] [--report FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/tensorfold PARALLEL=4 DURATION=1800 PORT=18600 REPORT=soak-report.json
while (($#)); do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --parallel) PARALLEL="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --port) PORT="$2"; shift 2 ;;
    --report) REPORT="$2"; shift 2 ;;
    *) echo "usage: $0 [--bin PATH] [--parallel N] [--duration S] [--port P] [--report FILE]" >&2; exit 2 ;;
  esac
done
log=$(mktemp)
"$BIN" serve --port "$PORT" --parallel "$PARALLEL" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$log"' EXIT
echo "soak: $BIN serve --parallel $PARALLEL (pid $pid), $((4 * PARALLEL)) clients for $DURATION s"
rc=0
.venv/bin/python scripts/load_test.py --pid "$pid" --url "http://127.0.0.1:$PORT" --clients $((4 * PARALLEL)) \
  --duration "$DURATION" --non-streaming 0.5 --sample 60 --settle 300 --report "$REPORT" || rc=$?
kill -0 "$pid" 2>/dev/null || { echo "soak: the server exited during the run"; tail -20 "$log"; rc=1; }
echo "soak: server log lines with 'error': $(grep -ci error "$log" || true); report in $REPORT"
exit "$rc"
