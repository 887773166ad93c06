#!/usr/bin/env python3
"""Black-box A2A 1.0 interop test: the official Python client (a2a-sdk 1.x)
against a running taskledger server.

Usage: python interop.py http://127.0.0.1:PORT [jsonrpc|http_json|grpc]

The binding defaults to JSON-RPC; `http_json` drives the same checks through
the SDK's HTTP+JSON (REST) transport against the card's HTTP+JSON interface,
and `grpc` through its gRPC transport against the card's GRPC interface (the
server started with --grpc-listen). Prints one line per check and finally
`N passed, M failed`; exits non-zero if any check failed.
"""

from __future__ import annotations

import asyncio
import sys
import traceback
import uuid

import grpc
import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskNotFoundError,
    TaskState,
)
from a2a.utils.constants import TransportProtocol

TIMEOUT_S = 30.0


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
            detail = ' '.join(detail.split())  # keep it to one line
            print(f'FAIL {name}' + (f': {detail}' if detail else ''), flush=True)
        return ok

    def error(self, name: str, exc: BaseException) -> None:
        self.check(name, False, f'{type(exc).__name__}: {exc}')


def state_name(task: Task) -> str:
    return TaskState.Name(task.status.state)


def history_texts(task: Task) -> list[str]:
    return [p.text for m in task.history for p in m.parts if p.HasField('text')]


async def send_text(client, message_id: str, text: str) -> Task:
    """Sends a blocking (non-streaming) message; returns the resulting Task."""
    request = SendMessageRequest(
        message=Message(
            message_id=message_id,
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
        ),
        # return_immediately=False => the call blocks until the task reaches
        # a terminal or interrupted state (A2A 1.0 replacement for `blocking`).
        configuration=SendMessageConfiguration(
            accepted_output_modes=['text/plain'],
            return_immediately=False,
        ),
    )
    responses = [r async for r in client.send_message(request)]
    if len(responses) != 1:
        raise AssertionError(f'expected 1 response, got {len(responses)}')
    if not responses[0].HasField('task'):
        raise AssertionError(
            f'expected a Task result, got {responses[0].WhichOneof("payload")}'
        )
    return responses[0].task


class MetadataRecorder(grpc.aio.UnaryUnaryClientInterceptor):
    """Keeps the metadata of every unary gRPC call the SDK makes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, str]]] = []

    async def intercept_unary_unary(self, continuation, client_call_details, request):
        method = client_call_details.method
        if isinstance(method, bytes):
            method = method.decode()
        metadata = {k: v for k, v in (client_call_details.metadata or [])}
        self.calls.append((method, metadata))
        return await continuation(client_call_details, request)


async def run(base_url: str, c: Checks, binding: str = 'jsonrpc') -> None:
    base_url = base_url.rstrip('/')
    expected_rpc_url = f'{base_url}/a2a'
    grpc_run = binding == 'grpc'
    rest_run = binding == 'http_json'
    expected_rest_url = f'{base_url}/a2a/rest'
    recorder = MetadataRecorder()
    channel_urls: list[str] = []

    # Record every request the SDK makes so we can check its headers.
    seen_requests: list[httpx.Request] = []

    async def on_request(request: httpx.Request) -> None:
        seen_requests.append(request)

    async with httpx.AsyncClient(
        timeout=TIMEOUT_S, event_hooks={'request': [on_request]}
    ) as http:
        # 1. Agent card via the SDK's resolver (<base>/.well-known/agent-card.json).
        try:
            card = await A2ACardResolver(http, base_url).get_agent_card()
        except Exception as e:  # noqa: BLE001
            c.error('agent card resolves', e)
            return
        c.check('agent card resolves', True)
        ifaces = [
            (i.url, i.protocol_binding, i.protocol_version)
            for i in card.supported_interfaces
        ]
        c.check(
            'agent card has JSONRPC 1.0 interface at <base>/a2a',
            (expected_rpc_url, 'JSONRPC', '1.0') in ifaces,
            f'supportedInterfaces={ifaces}',
        )
        if rest_run:
            c.check(
                'agent card has HTTP+JSON 1.0 interface at <base>/a2a/rest',
                (expected_rest_url, 'HTTP+JSON', '1.0') in ifaces,
                f'supportedInterfaces={ifaces}',
            )
        grpc_urls = [u for (u, b, v) in ifaces if b == 'GRPC' and v == '1.0']
        if grpc_run:
            c.check(
                'agent card has GRPC 1.0 interface at host:port (no scheme)',
                len(grpc_urls) == 1 and '://' not in grpc_urls[0],
                f'supportedInterfaces={ifaces}',
            )

        def grpc_channel(url: str) -> grpc.aio.Channel:
            channel_urls.append(url)
            return grpc.aio.insecure_channel(url, interceptors=[recorder])

        # 2. Client via the SDK's factory, JSON-RPC binding, non-streaming so
        # send_message issues a blocking `SendMessage` call.
        # The A2A-Version header: ClientFactory itself does
        # `httpx_client.headers.setdefault('A2A-Version', '1.0')` on the
        # client we pass in, so we deliberately do NOT add it here; the
        # header check below verifies the SDK really sent it.
        if grpc_run:
            config = ClientConfig(
                streaming=False,
                grpc_channel_factory=grpc_channel,
                supported_protocol_bindings=[TransportProtocol.GRPC],
            )
        else:
            config = ClientConfig(
                streaming=False,
                httpx_client=http,
                supported_protocol_bindings=[
                    TransportProtocol.HTTP_JSON if rest_run else TransportProtocol.JSONRPC
                ],
            )
        label = 'GRPC' if grpc_run else ('HTTP+JSON' if rest_run else 'JSONRPC')
        try:
            client = ClientFactory(config).create(card)
        except Exception as e:  # noqa: BLE001
            c.error(f'client created from card ({label})', e)
            return
        c.check(f'client created from card ({label})', True)

        suffix = uuid.uuid4().hex[:12]
        complete_text = f'interop complete {suffix}'
        input_text = f'interop input-required {suffix}'
        completed: Task | None = None
        waiting: Task | None = None

        # 3. SendMessage -> COMPLETED
        try:
            completed = await send_text(
                client, f'tck-complete-task-{suffix}', complete_text
            )
            c.check(
                'SendMessage tck-complete-task -> TASK_STATE_COMPLETED',
                bool(completed.id)
                and completed.status.state == TaskState.TASK_STATE_COMPLETED,
                f'id={completed.id!r} state={state_name(completed)}',
            )
        except Exception as e:  # noqa: BLE001
            c.error('SendMessage tck-complete-task -> TASK_STATE_COMPLETED', e)

        # 4. SendMessage -> INPUT_REQUIRED
        try:
            waiting = await send_text(
                client, f'tck-input-required-{suffix}', input_text
            )
            c.check(
                'SendMessage tck-input-required -> TASK_STATE_INPUT_REQUIRED',
                bool(waiting.id)
                and waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED,
                f'id={waiting.id!r} state={state_name(waiting)}',
            )
        except Exception as e:  # noqa: BLE001
            c.error(
                'SendMessage tck-input-required -> TASK_STATE_INPUT_REQUIRED', e
            )

        # 5. GetTask on the input-required task
        name = 'GetTask returns id, state and history with the sent text'
        if waiting is None or not waiting.id:
            c.check(name, False, 'no task from previous step')
        else:
            try:
                got = await client.get_task(GetTaskRequest(id=waiting.id))
                texts = history_texts(got)
                c.check(
                    name,
                    got.id == waiting.id
                    and got.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
                    and input_text in texts,
                    f'id={got.id!r} state={state_name(got)} history_texts={texts}',
                )
            except Exception as e:  # noqa: BLE001
                c.error(name, e)

        # 6. ListTasks: both tasks present (following nextPageToken).
        name = 'ListTasks contains both tasks (following nextPageToken)'
        if completed is None or waiting is None:
            c.check(name, False, 'no tasks from previous steps')
        else:
            try:
                wanted = {completed.id, waiting.id}
                found: set[str] = set()
                token = ''
                pages = 0
                total_size = None
                while pages < 100:
                    page = await client.list_tasks(
                        ListTasksRequest(page_size=50, page_token=token)
                    )
                    pages += 1
                    total_size = page.total_size
                    found |= {t.id for t in page.tasks} & wanted
                    token = page.next_page_token
                    if found == wanted or not token:
                        break
                c.check(
                    name,
                    found == wanted and (total_size or 0) >= 2,
                    f'found={sorted(found)} wanted={sorted(wanted)} '
                    f'pages={pages} totalSize={total_size}',
                )
            except Exception as e:  # noqa: BLE001
                c.error(name, e)

            # 6b. Pagination semantics: pageSize=1 -> one task, a
            # nextPageToken, totalSize >= 2; the token yields a second,
            # different task.
            name = 'ListTasks pageSize=1 -> 1 task, nextPageToken, totalSize>=2'
            try:
                p1 = await client.list_tasks(ListTasksRequest(page_size=1))
                ok = (
                    len(p1.tasks) == 1
                    and p1.next_page_token != ''
                    and p1.total_size >= 2
                )
                detail = (
                    f'tasks={len(p1.tasks)} nextPageToken={p1.next_page_token!r} '
                    f'totalSize={p1.total_size} pageSize={p1.page_size}'
                )
                if ok:
                    p2 = await client.list_tasks(
                        ListTasksRequest(
                            page_size=1, page_token=p1.next_page_token
                        )
                    )
                    ok = len(p2.tasks) == 1 and p2.tasks[0].id != p1.tasks[0].id
                    detail += f' page2_tasks={[t.id for t in p2.tasks]}'
                c.check(name, ok, detail)
            except Exception as e:  # noqa: BLE001
                c.error(name, e)

            # 6c. contextId filter returns the completed task and only tasks
            # of that context.
            name = 'ListTasks contextId filter'
            try:
                lst = await client.list_tasks(
                    ListTasksRequest(context_id=completed.context_id)
                )
                ids = [t.id for t in lst.tasks]
                ctxs = {t.context_id for t in lst.tasks}
                c.check(
                    name,
                    bool(completed.context_id)
                    and completed.id in ids
                    and ctxs == {completed.context_id}
                    and lst.total_size == len(ids),
                    f'contextId={completed.context_id!r} ids={ids} '
                    f'totalSize={lst.total_size}',
                )
            except Exception as e:  # noqa: BLE001
                c.error(name, e)

        # 7. CancelTask on the input-required task
        name = 'CancelTask input-required task -> TASK_STATE_CANCELED'
        if waiting is None or not waiting.id:
            c.check(name, False, 'no task from previous step')
        else:
            try:
                canceled = await client.cancel_task(
                    CancelTaskRequest(id=waiting.id)
                )
                c.check(
                    name,
                    canceled.id == waiting.id
                    and canceled.status.state == TaskState.TASK_STATE_CANCELED,
                    f'id={canceled.id!r} state={state_name(canceled)}',
                )
            except Exception as e:  # noqa: BLE001
                c.error(name, e)
            name = 'GetTask after cancel -> TASK_STATE_CANCELED'
            try:
                got = await client.get_task(GetTaskRequest(id=waiting.id))
                c.check(
                    name,
                    got.status.state == TaskState.TASK_STATE_CANCELED,
                    f'state={state_name(got)}',
                )
            except Exception as e:  # noqa: BLE001
                c.error(name, e)

        # 8. GetTask on an unknown id -> SDK raises TaskNotFoundError (-32001)
        name = 'GetTask unknown id -> TaskNotFoundError (-32001)'
        if grpc_run:
            name = 'GetTask unknown id -> TaskNotFoundError (NOT_FOUND, TASK_NOT_FOUND)'
        try:
            got = await client.get_task(
                GetTaskRequest(id=f'no-such-task-{uuid.uuid4()}')
            )
            c.check(name, False, f'no error raised, got task id={got.id!r}')
        except TaskNotFoundError as e:
            cause = e.__cause__
            c.check(
                name,
                not grpc_run
                or (
                    isinstance(cause, grpc.aio.AioRpcError)
                    and cause.code() == grpc.StatusCode.NOT_FOUND
                ),
                f'cause={cause!r}',
            )
        except Exception as e:  # noqa: BLE001
            c.error(name, e)

        if grpc_run:
            # 9. Metadata the SDK actually sent on its gRPC calls, and where.
            bad_version = [
                (m, md.get('a2a-version')) for (m, md) in recorder.calls
                if md.get('a2a-version') != '1.0'
            ]
            c.check(
                'SDK sent a2a-version: 1.0 on every gRPC call',
                bool(recorder.calls) and not bad_version,
                f'calls={len(recorder.calls)} bad={bad_version}',
            )
            methods = sorted({m for (m, _) in recorder.calls})
            c.check(
                'SDK called lf.a2a.v1.A2AService at the card GRPC address',
                channel_urls == grpc_urls
                and all(m.startswith('/lf.a2a.v1.A2AService/') for m in methods),
                f'channels={channel_urls} card={grpc_urls} methods={methods}',
            )
            await client.close()
            return

        if rest_run:
            # 9. Headers and URLs of the SDK's HTTP+JSON requests (the card fetch aside).
            calls = [r for r in seen_requests if '/.well-known/' not in str(r.url)]
            bad_version = [
                (r.method, str(r.url), r.headers.get('A2A-Version')) for r in calls
                if r.headers.get('A2A-Version') != '1.0'
            ]
            c.check(
                'SDK sent A2A-Version: 1.0 on every HTTP+JSON request',
                bool(calls) and not bad_version,
                f'requests={len(calls)} bad={bad_version}',
            )
            elsewhere = sorted(
                {str(r.url) for r in calls if not str(r.url).startswith(expected_rest_url + '/')}
            )
            c.check(
                'SDK called only below the card HTTP+JSON interface URL',
                bool(calls) and not elsewhere,
                f'other urls={elsewhere}',
            )
            await client.close()
            return

        # 9. Headers the SDK actually put on the JSON-RPC POSTs.
        posts = [r for r in seen_requests if r.method == 'POST']
        bad_version = [
            r.headers.get('A2A-Version') for r in posts
            if r.headers.get('A2A-Version') != '1.0'
        ]
        c.check(
            'SDK sent A2A-Version: 1.0 on every JSON-RPC POST',
            bool(posts) and not bad_version,
            f'posts={len(posts)} bad={bad_version}',
        )
        wrong_url = sorted({str(r.url) for r in posts} - {expected_rpc_url})
        c.check(
            'SDK posted only to the card interface URL',
            bool(posts) and not wrong_url,
            f'other urls={wrong_url}',
        )

        await client.close()  # shared httpx client: closed by `async with`


def main() -> int:
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in (
        [], ['jsonrpc'], ['http_json'], ['grpc']
    ):
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
