"""A turn through taskledger vs calling the upstream directly (issue 52): N blocking
SendMessage "echo" calls, one after another, to the upstream A2A agent itself and to a
taskledger server in front of it (--agent-url); prints p50/p99 latency of each, the added
latency, and requests/s. Usage: bench_upstream.py UPSTREAM_URL TASKLEDGER_URL [N]
"""

import statistics
import sys
import time
import uuid

import httpx


def run(client: httpx.Client, url: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
            "messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "echo bench"}]}}}
        t = time.perf_counter()
        r = client.post(url, json=body, headers={"A2A-Version": "1.0"})
        out.append((time.perf_counter() - t) * 1000)
        state = r.json()["result"]["task"]["status"]["state"]
        assert state == "TASK_STATE_COMPLETED", r.text
    return out


def run_stream(client: httpx.Client, url: str, n: int) -> list[float]:
    """The same message as a stream read to its end: what taskledger itself asks of a
    streaming upstream."""
    out = []
    for _ in range(n):
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": {
            "messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "echo bench"}]}}}
        t = time.perf_counter()
        with client.stream("POST", url, json=body, headers={"A2A-Version": "1.0"}) as r:
            for _ in r.iter_lines():
                pass
        out.append((time.perf_counter() - t) * 1000)
    return out


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def main() -> None:
    upstream, ours = sys.argv[1].rstrip("/") + "/", sys.argv[2].rstrip("/") + "/a2a"
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    with httpx.Client(timeout=30) as c:
        run(c, upstream, 20)
        run(c, ours, 20)
        direct, streamed, through = [], [], []
        for _ in range(3):  # alternate, so drift hits each alike
            direct += run(c, upstream, n // 3)
            streamed += run_stream(c, upstream, n // 3)
            through += run(c, ours, n // 3)
    for name, xs in (("direct", direct), ("direct, streamed", streamed),
                     ("through taskledger", through)):
        print(f"{name:>20}: p50 {pct(xs, .5):7.2f} ms  p99 {pct(xs, .99):7.2f} ms  "
              f"{1000 / statistics.mean(xs):7.1f} req/s (one client)")
    print(f"{'added':>20}: p50 {pct(through, .5) - pct(direct, .5):7.2f} ms  "
          f"p99 {pct(through, .99) - pct(direct, .99):7.2f} ms  (over the unary call)")
    print(f"{'added':>20}: p50 {pct(through, .5) - pct(streamed, .5):7.2f} ms  "
          f"p99 {pct(through, .99) - pct(streamed, .99):7.2f} ms  (over the stream taskledger reads)")


if __name__ == "__main__":
    main()
