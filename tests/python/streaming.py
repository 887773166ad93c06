#!/usr/bin/env python3
"""Streaming interop: the official Python client (a2a-sdk 1.x) streaming from a
running taskledger server (SendStreamingMessage and SubscribeToTask).

Usage: python streaming.py http://127.0.0.1:PORT [jsonrpc|http_json|grpc]

The client is built from the card by the SDK's ClientFactory with
`streaming=True` on the chosen binding (JSON-RPC by default; `grpc` needs the
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
from a2a.client.client import ClientCallContext
from a2a.types import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskNotFoundError,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError

from interop import Checks

TIMEOUT_S = 30.0
LABELS = {'jsonrpc': 'JSONRPC', 'http_json': 'HTTP+JSON', 'grpc': 'GRPC'}


def request(message_id: str, text: str, task_id: str = '') -> SendMessageRequest:
    message = Message(message_id=message_id, role=Role.ROLE_USER, parts=[Part(text=text)])
    if task_id:
        message.task_id = task_id
    return SendMessageRequest(
        message=message,
        configuration=SendMessageConfiguration(accepted_output_modes=['text/plain']),
    )


def shape(events: list[StreamResponse]) -> list[str]:
    """['task', 'statusUpdate:TASK_STATE_WORKING', 'artifactUpdate', ...]"""
    out = []
    for e in events:
        kind = e.WhichOneof('payload')
        if kind == 'status_update':
            out.append('statusUpdate:' + TaskState.Name(e.status_update.status.state))
        else:
            out.append({'artifact_update': 'artifactUpdate'}.get(kind, kind or '?'))
    return out


def from_working(events: list[StreamResponse]) -> list[str]:
    kinds = shape(events)
    while kinds and kinds[0] in ('task', 'statusUpdate:TASK_STATE_SUBMITTED'):
        kinds.pop(0)
    return kinds


async def collect(stream) -> list[StreamResponse]:
    return [e async for e in stream]


async def run(base_url: str, c: Checks, binding: str) -> None:
    base_url = base_url.rstrip('/')
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        try:
            card = await A2ACardResolver(http, base_url).get_agent_card()
        except Exception as e:  # noqa: BLE001
            c.error('agent card resolves', e)
            return
        c.check(
            'agent card declares capabilities.streaming',
            card.capabilities.streaming,
            f'capabilities={card.capabilities}',
        )
        if binding == 'grpc':
            config = ClientConfig(
                streaming=True,
                grpc_channel_factory=grpc.aio.insecure_channel,
                supported_protocol_bindings=[TransportProtocol.GRPC],
            )
        else:
            protocol = TransportProtocol.HTTP_JSON if binding == 'http_json' else TransportProtocol.JSONRPC
            config = ClientConfig(
                streaming=True, httpx_client=http, supported_protocol_bindings=[protocol]
            )
        label = LABELS[binding]
        try:
            client = ClientFactory(config).create(card)
        except Exception as e:  # noqa: BLE001
            c.error(f'streaming client created from card ({label})', e)
            return
        c.check(f'streaming client created from card ({label})', True)
        try:
            await checks(c, client)
        finally:
            await client.close()


async def checks(c: Checks, client) -> None:
    suffix = uuid.uuid4().hex[:12]
    chunked_task = ''

    # 1. A streamed send: the Task, WORKING, both chunks as stored, COMPLETED, then the end.
    name = 'SendStreamingMessage tck-stream-artifact-chunked -> Task, WORKING, 2 chunks, COMPLETED'
    try:
        events = await collect(
            client.send_message(request(f'tck-stream-artifact-chunked-{suffix}', 'chunks'))
        )
        kinds = shape(events)
        chunks = [e.artifact_update for e in events if e.HasField('artifact_update')]
        ok = (
            kinds[:1] == ['task']
            and from_working(events)
            == [
                'statusUpdate:TASK_STATE_WORKING',
                'artifactUpdate',
                'artifactUpdate',
                'statusUpdate:TASK_STATE_COMPLETED',
            ]
            and [p.text for a in chunks for p in a.artifact.parts] == ['chunk-1 ', 'chunk-2']
            and [(a.append, a.last_chunk) for a in chunks] == [(False, False), (True, True)]
        )
        if events and events[0].HasField('task'):
            chunked_task = events[0].task.id
        c.check(name, ok, f'events={kinds} chunks={[(a.append, a.last_chunk) for a in chunks]}')
    except Exception as e:  # noqa: BLE001
        c.error(name, e)

    # 2. A streamed send ends where the task waits for input.
    name = 'SendStreamingMessage tck-input-required -> ends at TASK_STATE_INPUT_REQUIRED'
    waiting = ''
    try:
        events = await collect(client.send_message(request(f'tck-input-required-{suffix}', 'ask me')))
        kinds = shape(events)
        if events and events[0].HasField('task'):
            waiting = events[0].task.id
        c.check(
            name,
            kinds[:1] == ['task'] and kinds[-1] == 'statusUpdate:TASK_STATE_INPUT_REQUIRED',
            f'events={kinds}',
        )
    except Exception as e:  # noqa: BLE001
        c.error(name, e)

    # 3. A direct Message reply is one message event.
    name = 'SendStreamingMessage tck-message-response -> one Message event'
    try:
        events = await collect(
            client.send_message(request(f'tck-message-response-{suffix}', 'hi'))
        )
        c.check(
            name,
            shape(events) == ['message'] and events[0].message.role == Role.ROLE_AGENT,
            f'events={shape(events)}',
        )
    except Exception as e:  # noqa: BLE001
        c.error(name, e)

    # 4. Subscribing to the waiting task: its Task first; the answer's updates; the end.
    name = 'SubscribeToTask on the waiting task -> Task first, the answer\'s updates, closes at COMPLETED'
    if not waiting:
        c.check(name, False, 'no waiting task from step 2')
    else:
        try:
            sub = client.subscribe(SubscribeToTaskRequest(id=waiting))
            first = await asyncio.wait_for(anext(sub), TIMEOUT_S)
            # The answer, through a second (streamed) send to the same task.
            answered = await collect(
                client.send_message(
                    request(f'tck-stream-artifact-chunked-{suffix}-2', 'finish', task_id=waiting)
                )
            )
            rest = await asyncio.wait_for(collect(sub), TIMEOUT_S)
            ok = (
                first.HasField('task')
                and first.task.id == waiting
                and first.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
                and from_working(rest)
                == [
                    'statusUpdate:TASK_STATE_WORKING',
                    'artifactUpdate',
                    'artifactUpdate',
                    'statusUpdate:TASK_STATE_COMPLETED',
                ]
                and shape(answered)[-1:] == ['statusUpdate:TASK_STATE_COMPLETED']
            )
            c.check(name, ok, f'first={shape([first])} rest={shape(rest)} send={shape(answered)}')
        except Exception as e:  # noqa: BLE001
            c.error(name, e)

    # 5. Resuming a finished task from the start: every update once, no Task, then the end.
    name = 'SubscribeToTask with Last-Event-ID 0 on a finished task -> its updates, no Task'
    if not chunked_task:
        c.check(name, False, 'no task from step 1')
    else:
        try:
            context = ClientCallContext(service_parameters={'Last-Event-ID': '0'})
            events = await asyncio.wait_for(
                collect(client.subscribe(SubscribeToTaskRequest(id=chunked_task), context=context)),
                TIMEOUT_S,
            )
            c.check(
                name,
                'task' not in shape(events)
                and from_working(events)
                == [
                    'statusUpdate:TASK_STATE_WORKING',
                    'artifactUpdate',
                    'artifactUpdate',
                    'statusUpdate:TASK_STATE_COMPLETED',
                ],
                f'events={shape(events)}',
            )
        except Exception as e:  # noqa: BLE001
            c.error(name, e)

    # 6. Refusals before the stream, as the SDK's errors.
    async def refused(name: str, error: type, stream) -> None:
        try:
            events = await asyncio.wait_for(collect(stream), TIMEOUT_S)
            c.check(name, False, f'no error, got {shape(events)}')
        except error:
            c.check(name, True)
        except Exception as e:  # noqa: BLE001
            c.error(name, e)

    await refused(
        'SubscribeToTask unknown id -> TaskNotFoundError',
        TaskNotFoundError,
        client.subscribe(SubscribeToTaskRequest(id=f'no-such-task-{uuid.uuid4()}')),
    )
    if chunked_task:
        await refused(
            'SubscribeToTask on a finished task -> UnsupportedOperationError',
            UnsupportedOperationError,
            client.subscribe(SubscribeToTaskRequest(id=chunked_task)),
        )
        await refused(
            'SubscribeToTask with a non-numeric Last-Event-ID -> InvalidParamsError',
            InvalidParamsError,
            client.subscribe(
                SubscribeToTaskRequest(id=chunked_task),
                context=ClientCallContext(service_parameters={'Last-Event-ID': 'abc'}),
            ),
        )
    await refused(
        'SendStreamingMessage to an unknown task -> TaskNotFoundError',
        TaskNotFoundError,
        client.send_message(request(f'm-{suffix}', 'x', task_id=f'no-such-task-{uuid.uuid4()}')),
    )


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
