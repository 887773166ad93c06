#!/usr/bin/env python3
"""Black-box A2A 0.3 interop test: the official Python client of protocol 0.3
(a2a-sdk 0.3.26) against a running taskledger server.

Usage: python interop03.py http://127.0.0.1:PORT [jsonrpc|http_json|grpc]

The card is read from <base>/.well-known/agent-card.json by the SDK's
A2ACardResolver and the client is built by its ClientFactory, which takes the
named transport's URL from the card's `url`/`preferredTransport` and
`additionalInterfaces` (JSON-RPC by default; `http_json` is the 0.3 REST
binding under <interface>/v1/...; `grpc` is the a2a.v1.A2AService). Prints one
line per check and finally `N passed, M failed`; exits non-zero if any check
failed.

The 0.3 SDK client has no call for listing or deleting push notification
configs; those two go over the same transport by hand (JSON-RPC
`tasks/pushNotificationConfig/list|delete`, REST `GET|DELETE
/v1/tasks/{id}/pushNotificationConfigs[/{configId}]`, the gRPC stub), with the
SDK's own wire types.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
import time
import traceback
import uuid

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import httpx

from google.protobuf import json_format

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientHTTPError, A2AClientJSONRPCError
from a2a.grpc import a2a_pb2, a2a_pb2_grpc
from a2a.types import (
    AgentCard,
    GetTaskPushNotificationConfigParams,
    Message,
    MessageSendConfiguration,
    Part,
    PushNotificationConfig,
    Role,
    Task,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TaskState,
    TextPart,
    TransportProtocol,
)
from a2a.utils import proto_utils

TIMEOUT_S = 30.0
SETTLE_S = 10.0
LABELS = {
    'jsonrpc': TransportProtocol.jsonrpc.value,  # 'JSONRPC'
    'http_json': TransportProtocol.http_json.value,  # 'HTTP+JSON'
    'grpc': TransportProtocol.grpc.value,  # 'GRPC'
}
TERMINAL = {TaskState.completed, TaskState.canceled, TaskState.failed, TaskState.rejected}


class Checks:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, ok: bool, detail: str = '') -> bool:
        if ok:
            self.passed += 1
            print(f'PASS {name}', flush=True)
        else:
            self.failed += 1
            detail = ' '.join(str(detail).split())  # keep it to one line
            print(f'FAIL {name}' + (f': {detail}' if detail else ''), flush=True)
        return bool(ok)

    def error(self, name: str, exc: BaseException) -> None:
        self.check(name, False, f'{type(exc).__name__}: {exc}')


# ----------------------------------------------------------------------------
# Card, client, transport choice


def card_interfaces(card: AgentCard) -> dict[str, str]:
    """What the 0.3 ClientFactory sees: {transport: url}, preferred first."""
    server_set = {str(card.preferred_transport or 'JSONRPC'): card.url}
    for i in card.additional_interfaces or []:
        server_set[str(i.transport)] = i.url
    return server_set


async def resolve_card(c: Checks, http: httpx.AsyncClient, base_url: str) -> AgentCard | None:
    try:
        card = await A2ACardResolver(http, base_url).get_agent_card()
    except Exception as e:  # noqa: BLE001
        c.error('agent card resolves with the 0.3 SDK (AgentCard model)', e)
        return None
    c.check('agent card resolves with the 0.3 SDK (AgentCard model)', True)
    print(
        f'card: protocolVersion={card.protocol_version} url={card.url} '
        f'preferredTransport={card.preferred_transport} '
        f'additionalInterfaces={[(i.transport, i.url) for i in card.additional_interfaces or []]}',
        flush=True,
    )
    c.check(
        "card protocolVersion starts with '0.3' and url is set",
        (card.protocol_version or '').startswith('0.3') and bool(card.url),
        f'protocolVersion={card.protocol_version!r} url={card.url!r}',
    )
    return card


class GrpcRecorder(grpc.aio.UnaryUnaryClientInterceptor, grpc.aio.UnaryStreamClientInterceptor):
    """Keeps the method and metadata of every gRPC call the SDK makes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, str]]] = []

    def _note(self, details) -> None:
        method = details.method.decode() if isinstance(details.method, bytes) else details.method
        self.calls.append((method, dict(details.metadata or [])))

    async def intercept_unary_unary(self, continuation, details, request):
        self._note(details)
        return await continuation(details, request)

    async def intercept_unary_stream(self, continuation, details, request):
        self._note(details)
        return await continuation(details, request)


class Wire:
    """Everything the SDK client put on the wire, for the summary lines."""

    def __init__(self) -> None:
        self.http: list[httpx.Request] = []
        self.grpc = GrpcRecorder()
        self.channel_urls: list[str] = []

    async def on_request(self, request: httpx.Request) -> None:
        self.http.append(request)

    def channel(self, url: str) -> grpc.aio.Channel:
        self.channel_urls.append(url)
        return grpc.aio.insecure_channel(url, interceptors=[self.grpc])


def make_client(c: Checks, card: AgentCard, binding: str, streaming: bool, wire: Wire):
    """The SDK client for `binding`, from the card; (client, interface url) or None."""
    label = LABELS[binding]
    offered = card_interfaces(card)
    if not c.check(
        f'card offers a {label} interface (url/preferredTransport/additionalInterfaces)',
        label in offered,
        f'offered={offered}',
    ):
        return None
    # The SDK's own httpx client (closed by client.close()), recording each request.
    sdk_http = None if binding == 'grpc' else httpx.AsyncClient(
        timeout=TIMEOUT_S, event_hooks={'request': [wire.on_request]})
    config = ClientConfig(
        streaming=streaming,
        httpx_client=sdk_http,
        grpc_channel_factory=wire.channel,
        supported_transports=[label],
    )
    name = f'ClientFactory builds a {"streaming " if streaming else ""}{label} client from the card'
    try:
        client = ClientFactory(config).create(card)
    except Exception as e:  # noqa: BLE001
        c.error(name, e)
        return None
    transport = client._transport  # noqa: SLF001 (to report the URL it took)
    url = wire.channel_urls[-1] if binding == 'grpc' else getattr(transport, 'url', '')
    c.check(name, url.rstrip('/') == offered[label].rstrip('/'), f'url={url} card={offered[label]}')
    print(f'transport: {label} at {url}', flush=True)
    return client, offered[label]


def text_message(message_id: str, text: str, task_id: str | None = None,
                 context_id: str | None = None) -> Message:
    return Message(
        role=Role.user,
        parts=[Part(root=TextPart(text=text))],
        message_id=message_id,
        task_id=task_id,
        context_id=context_id,
    )


async def send(client, message: Message, configuration: MessageSendConfiguration | None = None):
    """A non-streaming send: the one Task (or Message) result."""
    results = []
    async for r in client.send_message(message, configuration=configuration):
        results.append(r)
    if len(results) != 1:
        raise AssertionError(f'expected 1 result, got {len(results)}')
    r = results[0]
    return r[0] if isinstance(r, tuple) else r


def user_texts(task: Task) -> list[str]:
    return [
        p.root.text
        for m in task.history or []
        if m.role == Role.user
        for p in m.parts
        if isinstance(p.root, TextPart)
    ]


def artifact_texts(task: Task) -> list[str]:
    return [p.root.text for a in task.artifacts or [] for p in a.parts if isinstance(p.root, TextPart)]


def describe(task) -> str:
    if not isinstance(task, Task):
        return f'not a Task: {type(task).__name__}'
    return f'id={task.id} kind={task.kind} state={task.status.state.value}'


async def expect_error(c: Checks, name: str, binding: str, call, *, jsonrpc: int,
                       http: int, grpc_code: grpc.StatusCode) -> None:
    """`call` must fail with the binding's form of one A2A error."""
    want = {'jsonrpc': f'JSON-RPC {jsonrpc}', 'http_json': f'HTTP {http}',
            'grpc': f'gRPC {grpc_code.name}'}[binding]
    name = f'{name} ({want})'
    try:
        got = await call()
        c.check(name, False, f'no error, got {describe(got)}')
        return
    except A2AClientJSONRPCError as e:
        ok = binding == 'jsonrpc' and e.error.code == jsonrpc
        c.check(name, ok, f'JSON-RPC error code={e.error.code} message={e.error.message!r}')
    except A2AClientHTTPError as e:
        ok = binding == 'http_json' and e.status_code == http
        c.check(name, ok, f'HTTP {e.status_code}: {e.message}')
    except grpc.aio.AioRpcError as e:
        ok = binding == 'grpc' and e.code() == grpc_code
        c.check(name, ok, f'gRPC {e.code().name}: {e.details()}')
    except Exception as e:  # noqa: BLE001
        c.error(name, e)


# ----------------------------------------------------------------------------
# Push notifications: a webhook receiver, and list/delete by hand


class Receiver:
    """A webhook receiver on 127.0.0.1 (a loopback URL, as the local server allows)."""

    def __init__(self) -> None:
        self.deliveries: list[dict] = []
        deliveries = self.deliveries

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                length = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(length).decode('utf-8', 'replace')
                deliveries.append({'path': self.path, 'headers': dict(self.headers.items()),
                                   'body': body, 'at': time.monotonic()})
                self.send_response(200)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):  # quiet
                pass

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = f'http://127.0.0.1:{self.server.server_address[1]}'
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def header(headers: dict, name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name.lower()), None)


class RawPush:
    """tasks/pushNotificationConfig/list and /delete on the chosen transport."""

    def __init__(self, binding: str, url: str, http: httpx.AsyncClient) -> None:
        self.binding, self.url, self.http = binding, url.rstrip('/'), http
        self.stub = None
        self.channel = None
        if binding == 'grpc':
            self.channel = grpc.aio.insecure_channel(url)
            self.stub = a2a_pb2_grpc.A2AServiceStub(self.channel)

    async def _rpc(self, method: str, params: dict):
        body = {'jsonrpc': '2.0', 'id': str(uuid.uuid4()), 'method': method, 'params': params}
        r = await self.http.post(self.url, json=body)
        r.raise_for_status()
        return r.json()

    async def list(self, task_id: str) -> list[TaskPushNotificationConfig]:
        if self.binding == 'jsonrpc':
            data = await self._rpc('tasks/pushNotificationConfig/list', {'id': task_id})
            if 'error' in data:
                raise AssertionError(f'JSON-RPC error {data["error"]}')
            if not isinstance(data.get('result'), list):
                raise AssertionError(f'result is not a bare array: {json.dumps(data)[:300]}')
            return [TaskPushNotificationConfig.model_validate(x) for x in data['result']]
        if self.binding == 'http_json':
            r = await self.http.get(f'{self.url}/v1/tasks/{task_id}/pushNotificationConfigs')
            if r.status_code != 200:
                raise AssertionError(f'HTTP {r.status_code}: {r.text[:200]}')
            pb = a2a_pb2.ListTaskPushNotificationConfigResponse()
            json_format.ParseDict(r.json(), pb)
            return [proto_utils.FromProto.task_push_notification_config(x) for x in pb.configs]
        resp = await self.stub.ListTaskPushNotificationConfig(
            a2a_pb2.ListTaskPushNotificationConfigRequest(parent=f'tasks/{task_id}'))
        return [proto_utils.FromProto.task_push_notification_config(x) for x in resp.configs]

    async def delete(self, task_id: str, config_id: str) -> str | dict:
        """Deletes; returns the JSON-RPC response (or a note on the reply)."""
        if self.binding == 'jsonrpc':
            data = await self._rpc('tasks/pushNotificationConfig/delete',
                                   {'id': task_id, 'pushNotificationConfigId': config_id})
            if 'error' in data:
                raise AssertionError(f'JSON-RPC error {data["error"]}')
            return data
        if self.binding == 'http_json':
            r = await self.http.delete(
                f'{self.url}/v1/tasks/{task_id}/pushNotificationConfigs/{config_id}')
            if not r.is_success:
                raise AssertionError(f'HTTP {r.status_code}: {r.text[:200]}')
            return f'HTTP {r.status_code}'
        await self.stub.DeleteTaskPushNotificationConfig(
            a2a_pb2.DeleteTaskPushNotificationConfigRequest(
                name=f'tasks/{task_id}/pushNotificationConfigs/{config_id}'))
        return 'OK'

    async def close(self) -> None:
        if self.channel is not None:
            await self.channel.close()


# ----------------------------------------------------------------------------


async def run(base_url: str, c: Checks, binding: str) -> None:
    base_url = base_url.rstrip('/')
    wire = Wire()
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        card = await resolve_card(c, http, base_url)
        if card is None:
            return
        c.check(
            'card declares capabilities.pushNotifications',
            bool(card.capabilities.push_notifications),
            f'capabilities={card.capabilities}',
        )
        made = make_client(c, card, binding, streaming=False, wire=wire)
        if made is None:
            return
        client, iface_url = made
        raw = RawPush(binding, iface_url, http)
        try:
            await checks(c, client, binding, raw)
        finally:
            await client.close()
            await raw.close()
    summarize_wire(wire, binding)


async def checks(c: Checks, client, binding: str, raw: RawPush) -> None:
    suffix = uuid.uuid4().hex[:12]
    complete_text = f'py03 complete {suffix}'
    input_text = f'py03 input-required {suffix}'
    follow_text = f'py03 follow-up {suffix}'
    completed: Task | None = None
    waiting: Task | None = None
    continued: Task | None = None

    # 1. Blocking message/send -> completed, with an artifact.
    name = 'message/send (blocking) tck-complete-task -> Task completed with an artifact'
    try:
        r = await send(client, text_message(f'tck-complete-task-{suffix}', complete_text))
        if isinstance(r, Task):
            completed = r
        c.check(
            name,
            isinstance(r, Task) and r.kind == 'task' and bool(r.id) and bool(r.context_id)
            and r.status.state == TaskState.completed and len(r.artifacts or []) >= 1,
            f'{describe(r)} contextId={getattr(r, "context_id", None)} '
            f'artifacts={artifact_texts(r) if isinstance(r, Task) else None}',
        )
    except Exception as e:  # noqa: BLE001
        c.error(name, e)

    # 2. Non-blocking send -> a Task at once, which reaches input-required.
    name = 'message/send blocking=false tck-input-required -> a Task at once (not terminal)'
    try:
        started = time.monotonic()
        r = await send(
            client,
            text_message(f'tck-input-required-{suffix}', input_text),
            MessageSendConfiguration(blocking=False, accepted_output_modes=['text/plain']),
        )
        ms = int((time.monotonic() - started) * 1000)
        if isinstance(r, Task):
            waiting = r
        c.check(
            name,
            isinstance(r, Task) and bool(r.id) and r.status.state not in TERMINAL,
            f'{describe(r)} in {ms} ms',
        )
    except Exception as e:  # noqa: BLE001
        c.error(name, e)

    name = 'that task reaches input-required (tasks/get polling)'
    if waiting is None:
        c.check(name, False, 'no task from the previous step')
    else:
        try:
            got = waiting
            polls = 0
            deadline = time.monotonic() + SETTLE_S
            while got.status.state != TaskState.input_required and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                got = await client.get_task(TaskQueryParams(id=waiting.id))
                polls += 1
            c.check(name, got.status.state == TaskState.input_required,
                    f'{describe(got)} after {polls} polls')
        except Exception as e:  # noqa: BLE001
            c.error(name, e)

    # 3. A follow-up message with that taskId continues the same task.
    name = 'message/send follow-up with taskId continues the input-required task -> completed'
    if waiting is None:
        c.check(name, False, 'no task from the previous steps')
    else:
        try:
            r = await send(client, text_message(f'tck-complete-task-{suffix}-2', follow_text,
                                                task_id=waiting.id, context_id=waiting.context_id))
            if isinstance(r, Task):
                continued = r
            c.check(
                name,
                isinstance(r, Task) and r.id == waiting.id and r.status.state == TaskState.completed,
                f'{describe(r)} (wanted id {waiting.id})',
            )
        except Exception as e:  # noqa: BLE001
            c.error(name, e)

    # 4. tasks/get: the history, and historyLength.
    if continued is None:
        c.check('tasks/get history checks', False, 'no continued task from the previous step')
    else:
        full = None
        name = 'tasks/get -> the history has both user messages, in order'
        try:
            full = await client.get_task(TaskQueryParams(id=continued.id))
            texts = user_texts(full)
            ok = full.id == continued.id and input_text in texts and follow_text in texts \
                and texts.index(input_text) < texts.index(follow_text)
            c.check(name, ok, f'{describe(full)} history={len(full.history or [])} user_texts={texts}')
        except Exception as e:  # noqa: BLE001
            c.error(name, e)
        name = 'tasks/get historyLength=1 -> only the newest message'
        try:
            got = await client.get_task(TaskQueryParams(id=continued.id, history_length=1))
            newest = (full.history or [None])[-1] if full else None
            ids = [m.message_id for m in got.history or []]
            c.check(
                name,
                len(ids) == 1 and newest is not None and ids[0] == newest.message_id,
                f'history={ids} newest={getattr(newest, "message_id", None)}',
            )
        except Exception as e:  # noqa: BLE001
            c.error(name, e)

    # 5. tasks/get of an unknown id -> TaskNotFound.
    await expect_error(
        c, 'tasks/get unknown id -> TaskNotFound', binding,
        lambda: client.get_task(TaskQueryParams(id=f'no-such-task-{uuid.uuid4()}')),
        jsonrpc=-32001, http=404, grpc_code=grpc.StatusCode.NOT_FOUND,
    )

    # 6. A task waiting for input (blocking send): push configs, then cancel.
    to_cancel: Task | None = None
    name = 'message/send (blocking) tck-input-required -> Task input-required'
    try:
        r = await send(client, text_message(f'tck-input-required-{suffix}-c', f'py03 cancel {suffix}'))
        if isinstance(r, Task):
            to_cancel = r
        c.check(name, isinstance(r, Task) and r.status.state == TaskState.input_required, describe(r))
    except Exception as e:  # noqa: BLE001
        c.error(name, e)

    receiver = Receiver()
    try:
        if to_cancel is None:
            c.check('push notification config checks', False, 'no input-required task')
            push_ready = False
        else:
            push_ready = await push_checks(c, client, raw, to_cancel.id, receiver, suffix)

        name = 'tasks/cancel of the input-required task -> canceled'
        if to_cancel is None:
            c.check(name, False, 'no task from the previous step')
        else:
            try:
                r = await client.cancel_task(TaskIdParams(id=to_cancel.id))
                c.check(name, r.id == to_cancel.id and r.status.state == TaskState.canceled,
                        describe(r))
            except Exception as e:  # noqa: BLE001
                c.error(name, e)
            name = 'tasks/get after the cancel -> canceled'
            try:
                r = await client.get_task(TaskQueryParams(id=to_cancel.id))
                c.check(name, r.status.state == TaskState.canceled, describe(r))
            except Exception as e:  # noqa: BLE001
                c.error(name, e)
            if push_ready:
                await webhook_checks(c, receiver, to_cancel.id, suffix)
    finally:
        receiver.close()

    # 7. Cancel of a completed task -> TaskNotCancelable.
    if completed is None:
        c.check('tasks/cancel of a completed task', False, 'no completed task from step 1')
    else:
        await expect_error(
            c, 'tasks/cancel of a completed task -> TaskNotCancelable', binding,
            lambda: client.cancel_task(TaskIdParams(id=completed.id)),
            jsonrpc=-32002, http=409, grpc_code=grpc.StatusCode.FAILED_PRECONDITION,
        )


async def push_checks(c: Checks, client, raw: RawPush, task_id: str, receiver: Receiver,
                      suffix: str) -> bool:
    hook_id, token = f'py03-hook-{suffix}', f'tok-{suffix}'
    other_id = f'py03-other-{suffix}'
    hook_url, other_url = f'{receiver.url}/hooks/{hook_id}', f'{receiver.url}/hooks/{other_id}'
    created = False

    def shape(cfg: TaskPushNotificationConfig) -> tuple:
        p = cfg.push_notification_config
        return (cfg.task_id, p.id, p.url, p.token)

    name = 'tasks/pushNotificationConfig/set -> TaskPushNotificationConfig {taskId, pushNotificationConfig:{id,url,token}}'
    try:
        got = await client.set_task_callback(TaskPushNotificationConfig(
            task_id=task_id,
            push_notification_config=PushNotificationConfig(id=hook_id, url=hook_url, token=token),
        ))
        created = c.check(name, shape(got) == (task_id, hook_id, hook_url, token), f'got={shape(got)}')
    except Exception as e:  # noqa: BLE001
        c.error(name, e)
    name = 'tasks/pushNotificationConfig/set of a second config (no token)'
    try:
        got = await client.set_task_callback(TaskPushNotificationConfig(
            task_id=task_id,
            push_notification_config=PushNotificationConfig(id=other_id, url=other_url),
        ))
        c.check(name, shape(got)[:3] == (task_id, other_id, other_url) and not got.push_notification_config.token,
                f'got={shape(got)}')
    except Exception as e:  # noqa: BLE001
        c.error(name, e)
    name = 'tasks/pushNotificationConfig/get (taskId + pushNotificationConfigId) -> the config'
    try:
        got = await client.get_task_callback(
            GetTaskPushNotificationConfigParams(id=task_id, push_notification_config_id=hook_id))
        c.check(name, shape(got) == (task_id, hook_id, hook_url, token), f'got={shape(got)}')
    except Exception as e:  # noqa: BLE001
        c.error(name, e)
    name = 'tasks/pushNotificationConfig/list -> both configs'
    try:
        got = await raw.list(task_id)
        ids = sorted(x.push_notification_config.id or '' for x in got)
        c.check(name, ids == sorted([hook_id, other_id]) and all(x.task_id == task_id for x in got),
                f'ids={ids}')
    except Exception as e:  # noqa: BLE001
        c.error(name, e)
    name = 'tasks/pushNotificationConfig/delete -> the list has the other config only'
    reply = None
    try:
        reply = await raw.delete(task_id, other_id)
        ids = [x.push_notification_config.id for x in await raw.list(task_id)]
        c.check(name, ids == [hook_id], f'delete: {reply}; ids after={ids}')
    except Exception as e:  # noqa: BLE001
        c.error(name, e)
    if raw.binding == 'jsonrpc' and isinstance(reply, dict):
        c.check('tasks/pushNotificationConfig/delete success carries "result": null',
                'result' in reply and reply['result'] is None, json.dumps(reply))
    return created


async def webhook_checks(c: Checks, receiver: Receiver, task_id: str, suffix: str) -> None:
    hook_path = f'/hooks/py03-hook-{suffix}'
    name = ('webhook got a POST with the 0.3 Task (kind "task", status.state "canceled"), '
            'X-A2A-Notification-Token and Content-Type application/json')
    hit = None
    deadline = time.monotonic() + SETTLE_S
    while hit is None and time.monotonic() < deadline:
        for d in list(receiver.deliveries):
            try:
                body = json.loads(d['body'])
            except ValueError:
                continue
            if (d['path'] == hook_path and isinstance(body, dict) and body.get('kind') == 'task'
                    and body.get('id') == task_id
                    and (body.get('status') or {}).get('state') == 'canceled'):
                hit = (d, body)
                break
        if hit is None:
            await asyncio.sleep(0.05)
    if hit is None:
        seen = [(d['path'], d['body'][:160]) for d in receiver.deliveries]
        c.check(name, False, f'deliveries={seen}')
        return
    d, body = hit
    try:
        Task.model_validate(body)
        valid = ''
    except Exception as e:  # noqa: BLE001
        valid = f' (not a valid 0.3 Task: {e})'
    c.check(
        name,
        header(d['headers'], 'X-A2A-Notification-Token') == f'tok-{suffix}' and not valid
        and (header(d['headers'], 'Content-Type') or '').startswith('application/json'),
        f'token={header(d["headers"], "X-A2A-Notification-Token")!r} '
        f'content-type={header(d["headers"], "Content-Type")!r}{valid}',
    )
    name = 'the deleted config got no notification of the cancel'
    late = [x for x in receiver.deliveries
            if x['path'] == f'/hooks/py03-other-{suffix}' and '"canceled"' in x['body']]
    c.check(name, not late, f'{len(late)} deliveries')


def summarize_wire(wire: Wire, binding: str) -> None:
    """Informational: what the 0.3 client sent (not checks)."""
    if binding == 'grpc':
        methods = sorted({m for m, _ in wire.grpc.calls})
        keys = sorted({k for _, md in wire.grpc.calls for k in md})
        print(f'wire: gRPC channels={wire.channel_urls} methods={methods} metadata keys={keys}')
        return
    def shape(path: str) -> str:
        path = re.sub(r'/pushNotificationConfigs/[^/]+$', '/pushNotificationConfigs/{configId}', path)
        return re.sub(r'/tasks/[^/:]+', '/tasks/{id}', path)

    seen = sorted({f'{r.method} {shape(r.url.path)}' + (f'?{r.url.query.decode()}' if r.url.query else '')
                   for r in wire.http})
    hdrs = sorted({k for r in wire.http for k in r.headers.keys()})
    print(f'wire: {len(wire.http)} requests: {seen}')
    print(f'wire: request headers seen: {hdrs}')


def main() -> int:
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ['jsonrpc'], ['http_json'], ['grpc']):
        print(f'usage: {sys.argv[0]} BASE_URL [jsonrpc|http_json|grpc]', file=sys.stderr)
        return 2
    binding = sys.argv[2] if len(sys.argv) == 3 else 'jsonrpc'
    c = Checks()
    try:
        asyncio.run(run(sys.argv[1], c, binding))
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        c.error('unexpected error', e)
    print(f'{c.passed} passed, {c.failed} failed', flush=True)
    return 1 if c.failed else 0


if __name__ == '__main__':
    sys.exit(main())
