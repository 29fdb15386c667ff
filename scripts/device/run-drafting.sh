#!/usr/bin/env bash
# Issues 6 and 7 on the device: serves the default model on CUDA, then checks drafted == serial
# (drafting_equality.py), measures drafted vs serial tokens/s (drafting_speed.py) and checks that 16
# concurrent requests each equal their solo run (concurrency_equality.py).
#   scripts/device/run-drafting.sh BIN_DIR MODEL.gguf [PORT]
# Extra server flags can be passed in TF_SERVE_ARGS. Logs go to $OUT (or /tmp) as drafting_*.log.
set -u
BIN=$1 MODEL=$2 PORT=${3:-8093}
OUT=${OUT:-/tmp}
mkdir -p "$OUT"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
[ -d "$BIN/lib" ] && export LD_LIBRARY_PATH="$BIN/lib:${LD_LIBRARY_PATH:-}"
# shellcheck disable=SC2086
setsid "$BIN/tensorfold" serve "$MODEL" --backend cuda --port "$PORT" ${TF_SERVE_ARGS:-} >"$OUT/drafting_serve.log" 2>&1 &
SPID=$!
for _ in $(seq 1 240); do
  curl -s "http://127.0.0.1:$PORT/health" 2>/dev/null | grep -q '"status":"ok"' && break
  kill -0 $SPID 2>/dev/null || break
  sleep 0.5
done
grep -iE "drafting|row check" "$OUT/drafting_serve.log" | head -5
python3 scripts/device/drafting_equality.py "http://127.0.0.1:$PORT" >"$OUT/drafting_equality.log" 2>&1
echo "equality rc $?: $(tail -2 "$OUT/drafting_equality.log" | tr '\n' ' ')"
python3 scripts/device/drafting_speed.py "http://127.0.0.1:$PORT" >"$OUT/drafting_speed.log" 2>&1
echo "speed rc $?:"
tail -12 "$OUT/drafting_speed.log"
(cd scripts/device && python3 concurrency_equality.py "http://127.0.0.1:$PORT" 16) >"$OUT/concurrency.log" 2>&1
echo "concurrency rc $?: $(tail -1 "$OUT/concurrency.log")"
kill $SPID 2>/dev/null
wait $SPID 2>/dev/null
exit 0
