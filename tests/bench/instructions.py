"""Instructions a request costs the server, counted by callgrind: a figure this shared VM's
neighbours do not move (requests/s and CPU time swing by ±10 % between rounds here).

Usage: python3 tests/bench/instructions.py BINARY [BINARY ...] [--sends N] [--gets N]

Each binary (a taskledger server) is started under `valgrind --tool=callgrind` on a fresh data
directory, warmed up, then driven by 4 clients: N SendMessage (returnImmediately; the default
agent completes each task), waiting until the last tasks completed, then N GetTask of one
completed task; callgrind's counters are zeroed before and dumped after each phase. Prints the
instructions a request (all threads: the turn, the writer and the checkpointer included) and,
for two or more binaries, each one's ratio to the first. Needs valgrind (Debian `valgrind`).
"""

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

CLIENTS = 4
WARM_UP = 200


def call(conn, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    conn.request("POST", "/a2a", body=body,
                 headers={"content-type": "application/json", "A2A-Version": "1.0"})
    r = conn.getresponse()
    data = r.read()
    if r.status != 200 or b'"error"' in data:
        raise SystemExit(f"{method}: HTTP {r.status}: {data[:300]!r}")
    return json.loads(data)["result"]


def drive(port, n, request):
    """`n` requests from CLIENTS connections; the results of the last ones."""
    results = []
    lock = threading.Lock()

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        for _ in range(n // CLIENTS):
            out = request(conn)
            with lock:
                results.append(out)

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def send(conn):
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hello"}]}
    config = {"returnImmediately": True, "historyLength": 0}
    return call(conn, "SendMessage", {"message": message, "configuration": config})["task"]["id"]


def wait_completed(port, ids):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    for task_id in ids:
        for _ in range(600):
            task = call(conn, "GetTask", {"id": task_id, "historyLength": 0})
            if task["status"]["state"] == "TASK_STATE_COMPLETED":
                break
            time.sleep(0.1)
        else:
            raise SystemExit(f"task {task_id} did not complete")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(command, work, port):
    """Starts a server (`command`: the binary, or a tool that runs it) listening on `port`
    with its data under `work`, and waits until it answers; the process (also used by
    `walpages.py`)."""
    server = subprocess.Popen(
        command + ["--listen", f"127.0.0.1:{port}", "--data-dir", os.path.join(work, "data")],
        env={**os.environ, "RUST_LOG": "warn"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(240):
        try:
            http.client.HTTPConnection("127.0.0.1", port, timeout=2).request(
                "GET", "/.well-known/agent-card.json")
            break
        except OSError:
            time.sleep(0.5)
    return server


def measure(binary, sends, gets):
    work = tempfile.mkdtemp(prefix="taskledger-instructions-")
    port = free_port()
    out = os.path.join(work, "callgrind.out")
    server = start(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    "--dump-instr=no", binary], work, port)
    try:
        ids = drive(port, WARM_UP, send)
        wait_completed(port, ids[-CLIENTS:])
        done = ids[0]
        counts = {}
        for phase, n, request in [("SendMessage", sends, send),
                                  ("GetTask", gets, lambda c: call(c, "GetTask", {"id": done}))]:
            subprocess.run(["callgrind_control", "-z", str(server.pid)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            results = drive(port, n, request)
            if phase == "SendMessage":
                wait_completed(port, results[-CLIENTS:])
            subprocess.run(["callgrind_control", "-d", phase, str(server.pid)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            counts[phase] = dumped_instructions(work) / n
        return counts
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


def dumped_instructions(work):
    """The instructions in the newest dump (callgrind numbers its dumps)."""
    dumps = [f for f in os.listdir(work) if f.startswith("callgrind.out.")]
    newest = max(dumps, key=lambda f: int(f.rsplit(".", 1)[1]))
    with open(os.path.join(work, newest)) as f:
        for line in f:
            if line.startswith("summary:"):
                os.remove(os.path.join(work, newest))
                return int(line.split()[1])
    raise SystemExit(f"no summary in {newest}")


def main():
    args = sys.argv[1:]
    sends, gets, binaries = 1000, 2000, []
    while args:
        a = args.pop(0)
        if a == "--sends":
            sends = int(args.pop(0))
        elif a == "--gets":
            gets = int(args.pop(0))
        else:
            binaries.append(a)
    if not binaries or shutil.which("valgrind") is None:
        raise SystemExit(__doc__)
    first = None
    for b in binaries:
        counts = measure(b, sends, gets)
        first = first or counts
        print(f"{b}: " + ", ".join(
            f"{op} {c / 1000:,.1f}k instructions ({c / first[op]:.3f}x)"
            for op, c in counts.items()), flush=True)


if __name__ == "__main__":
    main()
