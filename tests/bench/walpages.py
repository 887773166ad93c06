"""Which of the SQLite store's b-trees a SendMessage writes, page by page: what the WAL holds.

Usage: python3 tests/bench/walpages.py BINARY [--clients N] [--seconds S] [--runs R]

Each run starts the server (a taskledger binary) on a fresh data directory, drives N clients of
SendMessage (returnImmediately; the default agent completes each task) for S seconds, kills it
with SIGKILL (so no checkpoint copies the WAL away), and reads the WAL's current generation:
each frame is a page a transaction wrote. Pages are named by the b-tree that holds them now
(SQLite's `dbstat`, on a copy of the files), and tasks are counted by the events appended (a
task appends seven: the request's four and its turn's three). Prints, over all runs, the
distinct pages a transaction writes, the tasks a transaction carries, and pages a task by
b-tree — a figure of the storage layout that this VM's neighbours do not move (one client: one
commit a transaction). Needs Python's `sqlite3` with `dbstat` (Debian's has it).
"""

import argparse
import collections
import http.client
import json
import mmap
import os
import shutil
import signal
import sqlite3
import struct
import tempfile
import threading
import time
import uuid

from instructions import free_port, start  # the same directory: the server's start-up

EVENTS_A_TASK = 7


def send(conn):
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hello"}]}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": message, "configuration": {"returnImmediately": True, "historyLength": 0}}})
    conn.request("POST", "/a2a", body=body,
                 headers={"content-type": "application/json", "A2A-Version": "1.0"})
    conn.getresponse().read()


def run_once(binary, clients, seconds):
    """Drives a fresh server, kills it, and returns its data directory (the caller removes it)."""
    work = tempfile.mkdtemp(prefix="taskledger-walpages-")
    port = free_port()
    server = start([binary], work, port)
    stop = threading.Event()

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            while not stop.is_set():
                send(conn)
        except (OSError, http.client.HTTPException):
            pass  # the server was killed

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    server.send_signal(signal.SIGKILL)
    server.wait()
    stop.set()
    for t in threads:
        t.join()
    return work


def varint(b, i):
    v = 0
    for k in range(9):
        x = b[i + k]
        if k == 8:
            return (v << 8) | x, i + 9
        v = (v << 7) | (x & 0x7F)
        if x < 0x80:
            return v, i + k + 1
    raise ValueError("varint")


def largest_rowid(page):
    """The largest rowid on a table b-tree leaf page, or None."""
    if page[0] != 13:
        return None
    cells = int.from_bytes(page[3:5], "big")
    if cells == 0:
        return None
    at = int.from_bytes(page[8 + 2 * (cells - 1):10 + 2 * (cells - 1)], "big")
    _, i = varint(page, at)
    return varint(page, i)[0]


def read_wal(db):
    """The WAL's transactions (each a list of (page number, page image)), its current
    generation only, and the name of each page's b-tree."""
    with open(db + "-wal", "rb") as f:
        wal = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    _, _, size, _, salt1, salt2, _, _ = struct.unpack(">IIIIIIII", wal[:32])
    txs, current, at = [], [], 32
    while at + 24 + size <= len(wal):
        page_no, commit, s1, s2 = struct.unpack(">IIII", wal[at:at + 16])
        if (s1, s2) != (salt1, salt2):
            break
        current.append((page_no, wal[at + 24:at + 24 + size]))
        at += 24 + size
        if commit:
            txs.append(current)
            current = []
    copy = tempfile.mkdtemp(prefix="taskledger-walcopy-")
    try:
        shutil.copy(db, os.path.join(copy, "d.db"))
        shutil.copy(db + "-wal", os.path.join(copy, "d.db-wal"))
        conn = sqlite3.connect(os.path.join(copy, "d.db"))
        names = dict((p, n) for n, p in conn.execute("SELECT name, pageno FROM dbstat"))
        conn.close()
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    return txs, names


def count(txs, names):
    """Pages a transaction by b-tree, transactions, and events appended (from the second
    transaction on: the first one's own are not known)."""
    pages = collections.Counter()
    tops = []
    for tx in txs:
        top = max((largest_rowid(img) or 0 for no, img in tx if names.get(no) == "events"),
                  default=0)
        tops.append(max(top, tops[-1] if tops else 0))
    for tx in txs[1:]:
        for no in {no for no, _ in tx}:
            pages[names.get(no, "(new or free)")] += 1
    events = sum(b - a for a, b in zip(tops, tops[1:]))
    return pages, len(txs) - 1, events


def main():
    parser = argparse.ArgumentParser(description="The pages a SendMessage writes, by b-tree.")
    parser.add_argument("binary", help="a taskledger server binary")
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    binary, clients, seconds, runs = args.binary, args.clients, args.seconds, args.runs
    pages, txs, events = collections.Counter(), 0, 0
    for _ in range(runs):
        work = run_once(binary, clients, seconds)
        try:
            p, t, e = count(*read_wal(os.path.join(work, "data", "taskledger.sqlite")))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        pages.update(p)
        txs += t
        events += e
    tasks = events / EVENTS_A_TASK
    if not txs or not tasks:
        raise SystemExit("no transactions in the WAL: run longer")
    total = sum(pages.values())
    print(f"{clients} client(s), {runs} run(s): {txs} transactions, {tasks:.0f} tasks; "
          f"{total / txs:.2f} pages a transaction, {tasks / txs:.2f} tasks a transaction, "
          f"{total / tasks:.2f} pages ({total / tasks * 4:.0f} KiB) a task")
    print(f"  {'b-tree':28s} {'a transaction':>14s} {'a task':>8s}")
    for name, k in pages.most_common():
        print(f"  {name:28s} {k / txs:14.2f} {k / tasks:8.2f}")


if __name__ == "__main__":
    main()
