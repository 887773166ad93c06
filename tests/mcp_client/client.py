#!/usr/bin/env python3
"""taskledger's MCP endpoint through the official MCP Python SDK (mcp 2.3.0), black-box.

1. A client with MCP's Tasks extension (io.modelcontextprotocol/tasks, SEP-2663, added here as
   a client extension: the SDK ships none) calls send_message: the server answers with a task,
   polled with tasks/get to its result; the same task is read over A2A (JSON-RPC) as completed.
2. A task created over A2A (it asks for input) is read over MCP as input_required with an
   elicitation, answered with tasks/update, and completes (read over A2A).
3. A client without the extension gets the finished task's result at once.
4. An unknown task is refused with -32602; a call without credentials with HTTP 401.

Usage: client.py <base-url> <token>. Prints PASS/FAIL per check; exits 1 if any failed.
"""

import asyncio
import json
import sys
import urllib.error
import urllib.request
import uuid
from typing import Any, Literal

import httpx2
from mcp import Client, types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

TASKS = "io.modelcontextprotocol/tasks"
BASE, TOKEN = sys.argv[1], sys.argv[2]
failed = 0


def check(name: str, ok: bool, detail: Any = "") -> None:
    global failed
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    failed += 0 if ok else 1


def a2a(method: str, params: dict) -> dict:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    req = urllib.request.Request(f"{BASE}/a2a", data=body, headers={
        "Content-Type": "application/json", "A2A-Version": "1.0", "Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


class TaskIdParams(types.RequestParams):
    task_id: str


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"


class UpdateParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class UpdateTask(types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams
    name_param = "taskId"


class TaskState(types.Result):
    task_id: str
    status: str
    status_message: str | None = None
    input_requests: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class CreatedTask(types.Result):
    result_type: Literal["task"]
    task_id: str
    status: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class Tasks(ClientExtension):
    """MCP's Tasks extension as a client extension: a task answer is polled to its result."""

    identifier = TASKS

    def __init__(self) -> None:
        self.created: list[CreatedTask] = []

    def claims(self):
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        self.created.append(created)
        for _ in range(200):
            got = await ctx.session.send_request(GetTask(params=TaskIdParams(task_id=created.task_id)), TaskState)
            if got.status == "completed":
                return types.CallToolResult.model_validate(got.result)
            if got.status != "working":
                raise RuntimeError(f"task {created.task_id} is {got.status}")
            await asyncio.sleep((created.poll_interval_ms or 1000) / 1000)
        raise RuntimeError(f"task {created.task_id} stays working")


def transport():
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    return streamable_http_client(f"{BASE}/mcp", http_client=http)


async def main() -> None:
    tasks = Tasks()
    async with Client(transport(), extensions=[tasks]) as c:
        check("the client speaks MCP 2026-07-28", c.protocol_version >= "2026-07-28", c.protocol_version)
        tools = await c.list_tools()
        check("the server offers send_message", [t.name for t in tools.tools] == ["send_message"], tools)
        result = await c.call_tool("send_message", {"text": "hello from python"})
        check("the call was answered with a task", len(tasks.created) == 1, tasks.created)
        text = " ".join(getattr(b, "text", "") for b in result.content)
        check("the task's result carries the agent's answer", "hello from python" in text, result)
        if tasks.created:
            task_id = tasks.created[0].task_id
            check("the task says when to poll and how long it is kept",
                  tasks.created[0].poll_interval_ms == 1000 and tasks.created[0].ttl_ms, tasks.created[0])
            got = a2a("GetTask", {"id": task_id})["result"]
            check("the MCP task is the A2A task", got["status"]["state"] == "TASK_STATE_COMPLETED", got)

        # A task asked over A2A, answered over MCP.
        asked = a2a("SendMessage", {"message": {"messageId": f"tck-input-required-{uuid.uuid4().hex}",
                                                 "role": "ROLE_USER", "parts": [{"text": "book a flight"}]}})
        a2a_id = asked["result"]["task"]["id"]
        state = await c.session.send_request(GetTask(params=TaskIdParams(task_id=a2a_id)), TaskState)
        check("an A2A task waiting for input is input_required over MCP", state.status == "input_required", state)
        keys = list((state.input_requests or {}).keys())
        check("it asks one question, as an elicitation",
              len(keys) == 1 and state.input_requests[keys[0]]["method"] == "elicitation/create", state)
        if keys:
            answer = {keys[0]: {"action": "accept", "content": {"text": "window seat"}}}
            await c.session.send_request(UpdateTask(params=UpdateParams(task_id=a2a_id, input_responses=answer)),
                                         types.EmptyResult)
            for _ in range(100):
                done = a2a("GetTask", {"id": a2a_id})["result"]
                if done["status"]["state"] == "TASK_STATE_COMPLETED":
                    break
                await asyncio.sleep(0.05)
            check("the answer given over MCP completes the A2A task",
                  done["status"]["state"] == "TASK_STATE_COMPLETED", done)
        try:
            await c.session.send_request(GetTask(params=TaskIdParams(task_id="no-such-task")), TaskState)
            check("an unknown task is refused", False, "answered")
        except MCPError as e:
            check("an unknown task is refused with -32602", e.error.code == -32602, e.error)

    # A client without the extension: the result at once.
    async with Client(transport()) as plain:
        r = await plain.call_tool("send_message", {"text": "plain hello"})
        s = r.structured_content or {}
        check("without the extension the call answers with the finished task's result",
              s.get("state") == "TASK_STATE_COMPLETED" and not r.is_error, r)

    # Without credentials, 401 before MCP starts.
    req = urllib.request.Request(f"{BASE}/mcp", data=b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}',
                                 headers={"Content-Type": "application/json",
                                          "Accept": "application/json, text/event-stream"})
    try:
        urllib.request.urlopen(req, timeout=10)
        check("a call without credentials is refused", False, "answered")
    except urllib.error.HTTPError as e:
        check("a call without credentials is refused with 401", e.code == 401, e.code)


asyncio.run(main())
print(f"{'FAILED' if failed else 'OK'}: {failed} failed")
sys.exit(1 if failed else 0)
