#!/usr/bin/env bash
# The test command. Installs what it needs (Python venvs for the AWS emulator, cfn-lint and the
# official A2A client), starts moto (DynamoDB, SQS and S3 on one port, like LocalStack's 4566) on
# 127.0.0.1, and runs:
#   1. every cargo test — domain, storage contract suite on SQLite and on DynamoDB, black-box API
#      tests on SQLite, round-trip budgets on DynamoDB, the archive of expiring tasks to S3,
#      one trace from request to turn to webhook exported to an OTLP receiver (SQLite and the
#      emulator path), /metrics deltas, EMF lines against the format, the template's alarms; then the black-box API tests (api,
#      extension, llm_agent, push, generations, acts, handoff, hitl, jwt, limits, secrets, sharing,
#      streaming, streaming_resume, events) a second and a third time over HTTP+JSON and over gRPC;
#   2. the black-box API and streaming tests again with the server on DynamoDB; an upstream A2A
#      agent behind taskledger (the official Python SDK's 1.x and 0.3 servers from
#      tests/upstream/, venvs in tests/upstream/.venv1 and .venv03) on SQLite and DynamoDB,
#      and across a kill -9 of the server (upstream_crash); the model agent's MCP tools against
#      the official @modelcontextprotocol/server-everything (npm ci into tests/mcp); taskledger's
#      own /mcp with the official MCP Python SDK (mcp 2.3.0 into tests/mcp_client/.venv) and the
#      MCP Inspector CLI (tests/mcp); a soak of
#      the serverless path on the emulator (200 blocking sends over two minutes), the fault
#      harness (SIGKILLs under load, duplicate turn messages and stream batches, a throttling
#      proxy: every acknowledged task finishes, nothing applied twice, no push lost); then the API
#      function's own binary as Lambda runs it, streamed and buffered, through cargo lambda's
#      emulated runtime API (cargo-lambda installed into .tools/lambda-venv), and the worker
#      function's binary following a long upstream task across invocations;
#   3. cfn-lint on template.yaml (and `sam validate --lint` when aws-sam-cli is installed);
#   4. the official Python client (a2a-sdk 1.x) against a freshly started local server, over
#      JSON-RPC and HTTP+JSON, then over gRPC against a server started with --grpc-listen: the
#      unary checks (interop.py) and the streaming ones (streaming.py) on each;
#   5. the official JavaScript client (@a2a-js/sdk 1.x, npm ci into tests/js/node_modules) against
#      a freshly started local server, on the transport it picks from the card (and on each
#      binding explicitly once the card also lists HTTP+JSON), then its streaming
#      (sendMessageStream, resubscribeTask: streaming.mjs) on each binding;
#   6. a signed agent card and bearer tokens: both official clients' signature verifiers and
#      authenticated calls (card_signature.py, card_signature.mjs), the card's RFC 8785
#      signatures checked by independent canonicalizers, and a2a-sdk 0.3's verifier
#      (card_signature03.py);
#   6b. the official A2A 0.3 clients (a2a-sdk 0.3.26 into tests/python03/.venv, @a2a-js/sdk
#      0.3.14 into tests/js03/node_modules) over JSON-RPC, HTTP+JSON and gRPC against one server:
#      send, get, cancel, streams, resubscribe, push configs with a webhook receiving 0.3 Tasks;
#   7. the task board in Debian's Chromium (installed with apt-get when missing), driven by
#      playwright-core (board.mjs): three people, live updates, answers, a handoff, a cancel;
#      screenshots into target/screenshots.
# Point it at LocalStack or real AWS instead by exporting AWS_ENDPOINT_URL (and credentials)
# yourself: the emulator is then not started.
#
# `scripts/test.sh quick` is the inner loop's tier: every cargo test on the embedded store over
# JSON-RPC only (no emulator: the DynamoDB cases say "skipped"), no clients, no browser — a few
# minutes. CI runs the full command.
set -euo pipefail
cd "$(dirname "$0")/.."
# The built-in agent's conformance and fault scenarios (off in production) steer every server
# the tests start: the binaries read this, the in-process servers' test configurations turn
# them on themselves.
export TASKLEDGER_CONFORMANCE_SCENARIOS=true

if [ "${1:-}" = quick ]; then
  unset AWS_ENDPOINT_URL TASKLEDGER_REQUIRE_DYNAMODB TASKLEDGER_TEST_BINDING TASKLEDGER_TEST_STORE
  echo "==> quick: cargo test on SQLite, JSON-RPC (scripts/test.sh without 'quick' runs everything)"
  cargo build --quiet -p taskledger-local
  cargo test --workspace --all-targets
  exit 0
fi

tools=.tools/venv
if [ ! -x "$tools/bin/python" ] || ! "$tools/bin/python" -c 'import moto, cfnlint, moto.s3.responses' 2>/dev/null; then
  echo "==> installing moto and cfn-lint into $tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check 'moto[server,dynamodb,sqs,s3]==5.2.5' 'cfn-lint==1.*'
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
wait_for() { for _ in $(seq 1 100); do curl -fsS "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "not up: $1"; return 1; }

if [ -z "${AWS_ENDPOINT_URL:-}" ]; then
  port=$(free_port)
  "$tools/bin/python" scripts/moto_server.py "$port" >/tmp/taskledger-moto.log 2>&1 &
  pids+=($!)
  export AWS_ENDPOINT_URL="http://127.0.0.1:$port"
  export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
  wait_for "$AWS_ENDPOINT_URL/moto-api/"
  echo "==> moto on $AWS_ENDPOINT_URL"
  # A second moto with its own transactions (a canceled one swaps the table under the stream's
  # iterators): the stream poller's tests check that it notices and loses nothing.
  stock_port=$(free_port)
  "$tools/bin/python" scripts/moto_server.py "$stock_port" --stock-transactions >/tmp/taskledger-moto-stock.log 2>&1 &
  pids+=($!)
  export TASKLEDGER_STOCK_MOTO_URL="http://127.0.0.1:$stock_port"
  wait_for "$TASKLEDGER_STOCK_MOTO_URL/moto-api/"
fi
export TASKLEDGER_REQUIRE_DYNAMODB=1

echo "==> cargo test (domain, storage contract on SQLite + DynamoDB, black-box API, round trips)"
# The crash test (tests/tests/crash.rs) runs the server's own binary: build it first.
cargo build --quiet -p taskledger-local
cargo test --workspace --all-targets

for binding in rest grpc; do
  echo "==> black-box API tests again over ${binding} (TASKLEDGER_TEST_BINDING=${binding}, on SQLite)"
  TASKLEDGER_TEST_BINDING=$binding cargo test --workspace --test api --test extension --test llm_agent --test push \
    --test generations --test acts --test handoff --test hitl --test jwt --test limits --test secrets --test sharing --test streaming --test streaming_resume \
    --test events
done

echo "==> black-box API and streaming tests with the server on DynamoDB"
TASKLEDGER_TEST_STORE=dynamodb cargo test --workspace --test api --test extension --test llm_agent --test v03 \
  --test generations --test acts --test elicitations --test handoff --test hitl --test sharing --test streaming --test streaming_resume \
  --test events

echo "==> upstream A2A agents behind taskledger (issue 52): a2a-sdk 1.x and 0.3 servers, on SQLite and on DynamoDB"
for v in v1 v03; do
  upvenv=tests/upstream/.venv${v#v}
  if [ ! -x "$upvenv/bin/python" ] || ! "$upvenv/bin/python" -c 'import a2a, uvicorn, starlette' 2>/dev/null; then
    python3 -m venv "$upvenv"
    "$upvenv/bin/pip" install --quiet --disable-pip-version-check -r "tests/upstream/requirements-$v.txt"
  fi
done
export TASKLEDGER_UPSTREAM_PY1="$PWD/tests/upstream/.venv1/bin/python"
export TASKLEDGER_UPSTREAM_PY03="$PWD/tests/upstream/.venv03/bin/python"
TASKLEDGER_REQUIRE_UPSTREAM=1 cargo test --workspace --test upstream --test upstream_crash --test upstream_redelivery
TASKLEDGER_REQUIRE_UPSTREAM=1 TASKLEDGER_TEST_STORE=dynamodb cargo test --workspace --test upstream

echo "==> MCP tools for the model agent (issue 52): the official @modelcontextprotocol/server-everything over Streamable HTTP"
mcp=tests/mcp
if ! cmp -s "$mcp/package-lock.json" "$mcp/node_modules/.installed-lock.json"; then
  (cd "$mcp" && npm ci --no-audit --no-fund)
  cp "$mcp/package-lock.json" "$mcp/node_modules/.installed-lock.json"
fi
TASKLEDGER_MCP_EVERYTHING="$PWD/$mcp/everything_loopback.mjs" TASKLEDGER_REQUIRE_MCP=1 cargo test --workspace --test mcp

echo "==> every task an MCP task too (issue 56): taskledger's /mcp with the official MCP Python SDK and the MCP Inspector CLI"
mcpvenv=tests/mcp_client/.venv
if [ ! -x "$mcpvenv/bin/python" ] || ! "$mcpvenv/bin/python" -c 'import mcp, httpx2' 2>/dev/null; then
  python3 -m venv "$mcpvenv"
  "$mcpvenv/bin/pip" install --quiet --disable-pip-version-check -r tests/mcp_client/requirements.txt
fi
cargo build --quiet -p taskledger-local
port=$(free_port)
log=$(mktemp)
"${CARGO_TARGET_DIR:-target}/debug/taskledger" --store sqlite --listen "127.0.0.1:$port" --in-memory \
  --conformance-scenarios --tokens "tok-alice=acme/alice" >"$log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$port/.well-known/agent-card.json"
if ! "$mcpvenv/bin/python" tests/mcp_client/client.py "http://127.0.0.1:$port" tok-alice; then
  echo "--- server log"; cat "$log"
  exit 1
fi
inspect() {
  (cd "$mcp" && node_modules/.bin/mcp-inspector --cli "http://127.0.0.1:$port/mcp" --transport http \
    --header "Authorization: Bearer tok-alice" --format json "$@")
}
listed=$(inspect --protocol-era modern --method tools/list)
echo "$listed" | python3 -c 'import json,sys; t=json.load(sys.stdin)["result"]["tools"]; assert [x["name"] for x in t]==["send_message"], t'
# Modern: the call is answered with a task, which the Inspector polls (tasks/get) to its result.
called=$(inspect --protocol-era modern --method tools/call --tool-name send_message --tool-arg "text=from the inspector")
echo "$called" | python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; assert r["structuredContent"]["state"]=="TASK_STATE_COMPLETED" and r["structuredContent"]["artifacts"], r; assert "from the inspector" in r["content"][0]["text"], r'
# Legacy (2025-11-25, initialize): the finished task's result, no task.
legacy=$(inspect --method tools/call --tool-name send_message --tool-arg "text=legacy inspector")
echo "$legacy" | python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; assert r["structuredContent"]["state"]=="TASK_STATE_COMPLETED", r'
echo "MCP Inspector CLI: tools/list, tools/call as a task (modern) and as a result (legacy)"

echo "==> soak on the emulator path: 200 blocking sends over two minutes (stream → relay → SQS → worker)"
cargo test --workspace --test soak -- --ignored --nocapture

echo "==> fault injection on the emulator path: SIGKILLs, duplicate turns and stream batches, throttling (issue 45)"
cargo test --workspace --test faults -- --ignored --nocapture

echo "==> the API function as Lambda runs it (cargo lambda watch's runtime API; Function URL events; streamed and buffered)"
lambda=.tools/lambda-venv
if [ ! -x "$lambda/bin/cargo-lambda" ]; then
  echo "==> installing cargo-lambda into $lambda"
  python3 -m venv "$lambda"
  "$lambda/bin/pip" install --quiet --disable-pip-version-check 'cargo-lambda==1.9.2'
fi
# Built as they are deployed: the api and worker packages' own features (no gRPC).
cargo build --quiet -p taskledger-api -p taskledger-worker
TASKLEDGER_CARGO_LAMBDA="$PWD/$lambda/bin/cargo-lambda" \
TASKLEDGER_API_BIN="$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd)/api" \
  cargo test --workspace --test lambda_streams -- --ignored
echo "==> the worker function as Lambda runs it, following a long upstream task across invocations (issue 52)"
TASKLEDGER_CARGO_LAMBDA="$PWD/$lambda/bin/cargo-lambda" TASKLEDGER_REQUIRE_UPSTREAM=1 \
TASKLEDGER_WORKER_BIN="$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd)/worker" \
  cargo test --workspace --test lambda_worker -- --ignored --nocapture

echo "==> template.yaml"
"$tools/bin/cfn-lint" template.yaml
if command -v sam >/dev/null 2>&1; then SAM_CLI_TELEMETRY=0 sam validate --lint; fi

echo "==> Python a2a-sdk interop"
venv=tests/python/.venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import a2a, grpc, jwt, rfc8785' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/python/requirements.txt
fi
cargo build --quiet -p taskledger-local
port=$(free_port)
log=$(mktemp)
"${CARGO_TARGET_DIR:-target}/debug/taskledger" --store sqlite --listen "127.0.0.1:$port" --in-memory >"$log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$port/.well-known/agent-card.json"
if ! "$venv/bin/python" tests/python/interop.py "http://127.0.0.1:$port"; then
  echo "--- server log"; cat "$log"
  exit 1
fi
echo "==> Python a2a-sdk interop over HTTP+JSON"
if ! "$venv/bin/python" tests/python/interop.py "http://127.0.0.1:$port" http_json; then
  echo "--- server log"; cat "$log"
  exit 1
fi
for binding in jsonrpc http_json; do
  echo "==> Python a2a-sdk streaming over ${binding}"
  if ! "$venv/bin/python" tests/python/streaming.py "http://127.0.0.1:$port" "$binding"; then
    echo "--- server log"; cat "$log"
    exit 1
  fi
done
echo "==> Python a2a-sdk interop over gRPC"
port=$(free_port)
grpc_port=$(free_port)
while [ "$grpc_port" = "$port" ]; do grpc_port=$(free_port); done
log=$(mktemp)
"${CARGO_TARGET_DIR:-target}/debug/taskledger" --store sqlite --listen "127.0.0.1:$port" --in-memory \
  --grpc-listen "127.0.0.1:$grpc_port" >"$log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$port/.well-known/agent-card.json"
if ! "$venv/bin/python" tests/python/interop.py "http://127.0.0.1:$port" grpc; then
  echo "--- server log"; cat "$log"
  exit 1
fi
echo "==> Python a2a-sdk streaming over gRPC"
if ! "$venv/bin/python" tests/python/streaming.py "http://127.0.0.1:$port" grpc; then
  echo "--- server log"; cat "$log"
  exit 1
fi

echo "==> JavaScript @a2a-js/sdk interop"
js=tests/js
command -v npm >/dev/null || { echo "the JavaScript interop test needs Node.js >= 20 and npm"; exit 1; }
if ! cmp -s "$js/package-lock.json" "$js/node_modules/.installed-lock.json"; then
  echo "==> installing the npm packages into $js/node_modules (npm ci)"
  (cd "$js" && npm ci --no-audit --no-fund)
  cp "$js/package-lock.json" "$js/node_modules/.installed-lock.json"
fi
port=$(free_port)
log=$(mktemp)
"${CARGO_TARGET_DIR:-target}/debug/taskledger" --store sqlite --listen "127.0.0.1:$port" --in-memory >"$log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$port/.well-known/agent-card.json"
transports=(auto)
if curl -fsS "http://127.0.0.1:$port/.well-known/agent-card.json" | grep -q '"HTTP+JSON"'; then
  transports+=(jsonrpc http_json)
fi
for transport in "${transports[@]}"; do
  if ! node "$js/interop.mjs" "http://127.0.0.1:$port" --transport "$transport"; then
    echo "--- server log"; cat "$log"
    exit 1
  fi
done
streams=(jsonrpc)
if [ "${#transports[@]}" -gt 1 ]; then streams+=(http_json); fi
for transport in "${streams[@]}"; do
  echo "==> JavaScript @a2a-js/sdk streaming over ${transport}"
  if ! node "$js/streaming.mjs" "http://127.0.0.1:$port" --transport "$transport"; then
    echo "--- server log"; cat "$log"
    exit 1
  fi
done

echo "==> A2A 0.3: the official 0.3 clients (a2a-sdk 0.3.x, @a2a-js/sdk 0.3.x) on JSON-RPC, HTTP+JSON and gRPC"
venv03=tests/python03/.venv
if [ ! -x "$venv03/bin/python" ] || ! "$venv03/bin/python" -c 'import a2a, grpc, jwt' 2>/dev/null; then
  python3 -m venv "$venv03"
  "$venv03/bin/pip" install --quiet --disable-pip-version-check -r tests/python03/requirements.txt
fi
js03=tests/js03
if ! cmp -s "$js03/package-lock.json" "$js03/node_modules/.installed-lock.json"; then
  echo "==> installing the npm packages into $js03/node_modules (npm ci)"
  (cd "$js03" && npm ci --no-audit --no-fund)
  cp "$js03/package-lock.json" "$js03/node_modules/.installed-lock.json"
fi
port=$(free_port)
grpc_port=$(free_port)
while [ "$grpc_port" = "$port" ]; do grpc_port=$(free_port); done
log=$(mktemp)
"${CARGO_TARGET_DIR:-target}/debug/taskledger" --store sqlite --listen "127.0.0.1:$port" --in-memory \
  --grpc-listen "127.0.0.1:$grpc_port" >"$log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$port/.well-known/agent-card.json"
for transport in jsonrpc http_json grpc; do
  echo "==> a2a-sdk 0.3 over ${transport}"
  if ! "$venv03/bin/python" tests/python03/interop03.py "http://127.0.0.1:$port" "$transport" \
    || ! "$venv03/bin/python" tests/python03/streaming03.py "http://127.0.0.1:$port" "$transport"; then
    echo "--- server log"; cat "$log"
    exit 1
  fi
  echo "==> @a2a-js/sdk 0.3 over ${transport}"
  if ! node "$js03/interop03.mjs" "http://127.0.0.1:$port" --transport "$transport"; then
    echo "--- server log"; cat "$log"
    exit 1
  fi
done

echo "==> signed agent card and bearer tokens: the official Python and JavaScript clients"
key=$(mktemp)
node -e "const c=require('crypto');const {privateKey}=c.generateKeyPairSync('ec',{namedCurve:'P-256'});require('fs').writeFileSync(process.argv[1],privateKey.export({type:'pkcs8',format:'pem'}))" "$key"
port=$(free_port)
log=$(mktemp)
"${CARGO_TARGET_DIR:-target}/debug/taskledger" --store sqlite --listen "127.0.0.1:$port" --in-memory \
  --tokens "tok-bob=acme/bob" --push-signing-key-file "$key" --public-url "http://127.0.0.1:$port" >"$log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$port/.well-known/agent-card.json"
if ! "$venv/bin/python" tests/python/card_signature.py "http://127.0.0.1:$port" tok-bob; then
  echo "--- server log"; cat "$log"
  exit 1
fi
if ! node "$js/card_signature.mjs" "http://127.0.0.1:$port" tok-bob; then
  echo "--- server log"; cat "$log"
  exit 1
fi
if ! "$venv03/bin/python" tests/python03/card_signature03.py "http://127.0.0.1:$port"; then
  echo "--- server log"; cat "$log"
  exit 1
fi

echo "==> the task board in a real browser (Debian's Chromium, playwright-core)"
if ! command -v chromium >/dev/null 2>&1; then
  echo "==> installing Chromium from the OS packages"
  if [ "$(id -u)" -eq 0 ]; then apt_get=(apt-get); else apt_get=(sudo apt-get); fi
  "${apt_get[@]}" update -q >/dev/null || true
  DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -q chromium >/dev/null
fi
port=$(free_port)
log=$(mktemp)
"${CARGO_TARGET_DIR:-target}/debug/taskledger" --store sqlite --listen "127.0.0.1:$port" --in-memory \
  --tokens "tok-alice=acme/alice,tok-bob=acme/bob,tok-carol=acme/carol" >"$log" 2>&1 &
pids+=($!)
# A second server runs the model agent against a mock Chat Completions endpoint (mock_model.mjs,
# on a port the system gives it and it prints), with the official MCP test server's tools (its
# echo needs a person's approval, given on the page).
agent_port=$(free_port)
everything_port=$(free_port)
agent_log=$(mktemp)
mock_out=$(mktemp)
node "$js/mock_model.mjs" >"$mock_out" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$mock_out" ] && break; sleep 0.1; done
mock_port=$(head -n 1 "$mock_out")
node tests/mcp/everything_loopback.mjs "$everything_port" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$everything_port/mcp" && break; sleep 0.1; done
"${CARGO_TARGET_DIR:-target}/debug/taskledger" --store sqlite --listen "127.0.0.1:$agent_port" --in-memory \
  --tokens "tok-alice=acme/alice" --llm-base-url "http://127.0.0.1:$mock_port/v1" --llm-model mock-1 \
  --mcp-server "everything=http://127.0.0.1:$everything_port/mcp" --approve-tools everything__echo \
  >"$agent_log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$port/.well-known/agent-card.json"
wait_for "http://127.0.0.1:$agent_port/.well-known/agent-card.json"
shots="${CARGO_TARGET_DIR:-target}/screenshots"
if ! node "$js/board.mjs" "http://127.0.0.1:$port" "$shots" "http://127.0.0.1:$agent_port"; then
  echo "--- server logs"; cat "$log" "$agent_log"
  exit 1
fi
echo "screenshots of the board and a task page: $shots"

echo "==> the board's security in a real browser (issue 43: links, CSP, cross-site forms and requests)"
port=$(free_port)
open_port=$(free_port)
while [ "$open_port" = "$port" ]; do open_port=$(free_port); done
log=$(mktemp)
open_log=$(mktemp)
"${CARGO_TARGET_DIR:-target}/debug/taskledger" --store sqlite --listen "127.0.0.1:$port" --in-memory \
  --tokens "tok-alice=acme/alice,tok-bob=acme/bob,tok-mallory=acme/mallory" >"$log" 2>&1 &
pids+=($!)
"${CARGO_TARGET_DIR:-target}/debug/taskledger" --store sqlite --listen "127.0.0.1:$open_port" --in-memory >"$open_log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$port/.well-known/agent-card.json"
wait_for "http://127.0.0.1:$open_port/.well-known/agent-card.json"
if ! node "$js/security.mjs" "http://127.0.0.1:$port" "http://127.0.0.1:$open_port"; then
  echo "--- server logs"; cat "$log" "$open_log"
  exit 1
fi
