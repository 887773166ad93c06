#!/usr/bin/env bash
# Side-by-side throughput: taskledger (release build, embedded SQLite store, durable WAL) against
# the official Python SDK's reference server (a2a-sdk 1.3.0, in memory) and the official JS SDK
# with its durable SQLite store (@a2a-js/sdk 1.3.0, DatabaseTaskStore), with the shared kit in
# ../shared/bench: the same wrk load driver (load.py), alternating rounds (compare.sh), ratios
# from one run. Installs what it needs (wrk from Debian, a Python venv and an npm folder under
# .tools/bench), starts all three on free loopback ports, and prints the ratio tables.
#
# Usage: scripts/bench.sh [load.py args, default: -c 16 -d 10 --op send,get]
#   ROUNDS=3 (alternations per pair), KIT=../shared/bench (the kit's folder)
set -euo pipefail
cd "$(dirname "$0")/.."
KIT=${KIT:-../shared/bench}
[ -f "$KIT/load.py" ] || { echo "bench.sh: no benchmark kit at $KIT (set KIT)"; exit 2; }
KIT=$(cd "$KIT" && pwd)
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(-c 16 -d 10 --op send,get)
tools=.tools/bench
mkdir -p "$tools"

if ! command -v wrk >/dev/null; then
  echo "==> installing wrk"
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q wrk >/dev/null; else sudo apt-get install -y -q wrk >/dev/null; fi
fi
if [ ! -x "$tools/py/bin/python" ] || ! "$tools/py/bin/python" -c 'import a2a, uvicorn, httpx' 2>/dev/null; then
  echo "==> installing a2a-sdk 1.3.0 into $tools/py"
  python3 -m venv "$tools/py"
  "$tools/py/bin/pip" install --quiet --disable-pip-version-check 'a2a-sdk[http-server]==1.3.0' uvicorn httpx
fi
if [ ! -d "$tools/js/node_modules/@a2a-js/sdk" ]; then
  echo "==> installing @a2a-js/sdk 1.3.0 into $tools/js (better-sqlite3 compiles: a minute or two)"
  mkdir -p "$tools/js"
  (cd "$tools/js" && [ -f package.json ] || echo '{"private": true}' > package.json)
  (cd "$tools/js" && npm install --silent --no-audit --no-fund @a2a-js/sdk@1.3.0 express kysely better-sqlite3 >/dev/null)
fi
cp "$KIT/a2a_js_sqlite_server.mjs" "$tools/js/"

echo "==> building taskledger (release)"
cargo build --release -q -p taskledger-local

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
pids=()
data=$(mktemp -d -t taskledger-bench.XXXXXX)
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; rm -rf "$data"; }
trap cleanup EXIT
wait_for() { for _ in $(seq 1 300); do curl -fsS "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "not up: $1"; return 1; }

tl=$(free_port); py=$(free_port); js=$(free_port)
RUST_LOG=warn target/release/taskledger --listen "127.0.0.1:$tl" --data-dir "$data/tl" >"$data/tl.log" 2>&1 &
pids+=($!)
"$tools/py/bin/python" "$KIT/a2a_python_server.py" --port "$py" --log-level warning >"$data/py.log" 2>&1 &
pids+=($!)
(cd "$tools/js" && exec node a2a_js_sqlite_server.mjs "$js" "$data/js.db") >"$data/js.log" 2>&1 &
pids+=($!)
for p in "$tl" "$py" "$js"; do wait_for "http://127.0.0.1:$p/.well-known/agent-card.json"; done

export PYTHON="$tools/py/bin/python"
echo "==> taskledger (A) vs a2a-python in memory (B): load.py ${ARGS[*]}"
"$KIT/compare.sh" "http://127.0.0.1:$tl" "http://127.0.0.1:$py" "${ARGS[@]}" 2>"$data/py-rounds.log" | tee "$data/py.txt"
echo "==> taskledger (A) vs a2a-js on SQLite (B)"
"$KIT/compare.sh" "http://127.0.0.1:$tl" "http://127.0.0.1:$js" "${ARGS[@]}" 2>"$data/js-rounds.log" | tee "$data/js.txt"
# A p99 of one 5 s run rests on its ~50 slowest requests, and this VM's scheduling noise moves it
# by the minute: three runs, each printed, and their medians.
echo "==> one client, no queueing: taskledger latency (ROUNDS1=${ROUNDS1:-3} runs, then medians)"
for r in $(seq 1 "${ROUNDS1:-3}"); do
  "$PYTHON" "$KIT/load.py" "http://127.0.0.1:$tl" -c 1 -d 5 --op send,get | grep -E '^(send|get) ' \
    | sed "s/^/run $r  /" | tee -a "$data/one-client.txt"
done
"$PYTHON" - "$data/one-client.txt" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()  # run N op conc secs requests req/s p50 p99 errors
    rows.setdefault(f[2], []).append((float(f[7]), float(f[8])))
for op, v in rows.items():
    p50 = statistics.median(x[0] for x in v)
    p99 = statistics.median(x[1] for x in v)
    print(f"median of {len(v)}: {op} p50 {p50:.2f} ms p99 {p99:.2f} ms")
PY
