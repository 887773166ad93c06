#!/usr/bin/env bash
# The test command: unit, contract and black-box tests (cargo), then the official Python
# A2A client (a2a-sdk 1.x, installed into a venv here) against a freshly started local server.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> cargo test (domain, storage contract, black-box API)"
cargo test --workspace --all-targets

echo "==> Python a2a-sdk interop"
venv=tests/python/.venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import a2a' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/python/requirements.txt
fi
cargo build --quiet -p taskledger-local
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
log=$(mktemp)
./target/debug/taskledger --listen "127.0.0.1:$port" --in-memory >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 50); do
  curl -fsS "http://127.0.0.1:$port/.well-known/agent-card.json" >/dev/null 2>&1 && break
  sleep 0.1
done
if ! "$venv/bin/python" tests/python/interop.py "http://127.0.0.1:$port"; then
  echo "--- server log"; cat "$log"
  exit 1
fi
