#!/usr/bin/env python3
"""Streaming interop over A2A 0.3: the official Python client (a2a-sdk 0.3.26)
streaming from a running taskledger server (message/stream and
tasks/resubscribe).

Usage: python streaming03.py http://127.0.0.1:PORT [jsonrpc|http_json|grpc]

The client is built from the card by the SDK's ClientFactory with
`streaming=True` on the chosen transport (JSON-RPC by default). Prints one line
per check and finally `N passed, M failed`; exits non-zero if any check failed.
"""

from __future__ import annotations

import asyncio
import sys
import traceback
import uuid

import grpc
import httpx

from a2a.client.errors import A2AClientHTTPError, A2AClientJSONRPCError
from a2a.types import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskIdParams,
    TaskState,
    TaskStatusUpdateEvent,
    TextPart,
)

from interop03 import TERMINAL, TIMEOUT_S, Checks, Wire, make_client, resolve_card, text_message

# One SSE/gRPC stream event, as the 0.3 client hands it over: the Task, a
# status update, an artifact update (or a Message).
Event = Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message


async def collect(stream) -> list[Event]:
    """The events of one stream, until the server closes it.

    Each event is copied as it arrives: the client's task tracker appends later
    artifact chunks to the artifact object of the first chunk.
    """
    events: list[Event] = []
    async for item in stream:
        if isinstance(item, tuple):  # (task, update): the update, or the Task itself
            task, update = item
            item = update if update is not None else task
        events.append(item.model_copy(deep=True))
    return events


def shape(events: list[Event]) -> list[str]:
    """['task', 'status-update:working', 'artifact-update', 'status-update:completed(final)']"""
    out = []
    for e in events:
        if isinstance(e, TaskStatusUpdateEvent):
            out.append(f'status-update:{e.status.state.value}' + ('(final)' if e.final else ''))
        elif isinstance(e, TaskArtifactUpdateEvent):
            out.append('artifact-update')
        elif isinstance(e, Task):
            out.append('task')
        else:
            out.append(getattr(e, 'kind', type(e).__name__))
    return out


def ends_final(events: list[Event], state: TaskState) -> bool:
    """The last event is the only final status update, in `state`."""
    statuses = [e for e in events if isinstance(e, TaskStatusUpdateEvent)]
    return (
        bool(events)
        and isinstance(events[-1], TaskStatusUpdateEvent)
        and events[-1].final is True
        and events[-1].status.state == state
        and all(not s.final for s in statuses[:-1])
    )


async def run(base_url: str, c: Checks, binding: str) -> None:
    base_url = base_url.rstrip('/')
    wire = Wire()
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        card = await resolve_card(c, http, base_url)
        if card is None:
            return
        c.check('card declares capabilities.streaming', bool(card.capabilities.streaming),
                f'capabilities={card.capabilities}')
        made = make_client(c, card, binding, streaming=True, wire=wire)
        if made is None:
            return
        client, iface_url = made
        try:
            await checks(c, client, binding, iface_url, http)
        finally:
            await client.close()


async def checks(c: Checks, client, binding: str, iface_url: str, http: httpx.AsyncClient) -> None:
    suffix = uuid.uuid4().hex[:12]
    finished = ''

    # 1. message/stream of a chunked artifact: Task first, updates, final completed, the end.
    name = ('message/stream tck-stream-artifact-chunked -> Task first, status/artifact updates, '
            'last a final completed status update, then the stream closes')
    try:
        events = await asyncio.wait_for(
            collect(client.send_message(text_message(f'tck-stream-artifact-chunked-{suffix}', 'chunks'))),
            TIMEOUT_S)
        kinds = shape(events)
        if events and isinstance(events[0], Task):
            finished = events[0].id
        c.check(
            name,
            kinds[:1] == ['task'] and 'artifact-update' in kinds and ends_final(events, TaskState.completed)
            and all(getattr(e, 'task_id', None) == finished for e in events[1:])
            and all(getattr(e, 'kind', '') in ('status-update', 'artifact-update') for e in events[1:]),
            f'events={kinds}',
        )
        chunks = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
        got = [([p.root.text for p in a.artifact.parts if isinstance(p.root, TextPart)],
                bool(a.append), bool(a.last_chunk)) for a in chunks]
        c.check(
            "the artifact chunks: 'chunk-1 ' (append false, lastChunk false), 'chunk-2' (append true, lastChunk true)",
            got == [(['chunk-1 '], False, False), (['chunk-2'], True, True)]
            and len({a.artifact.artifact_id for a in chunks}) == 1,
            f'chunks={got} artifactIds={[a.artifact.artifact_id for a in chunks]}',
        )
    except Exception as e:  # noqa: BLE001
        c.error(name, e)

    # 2. message/stream of a task that waits for input: ends with a final input-required update.
    name = ('message/stream tck-input-required -> Task first, last a final (final: true) '
            'input-required status update, then the stream closes')
    waiting = ''
    try:
        events = await asyncio.wait_for(
            collect(client.send_message(text_message(f'tck-input-required-{suffix}', 'ask me'))),
            TIMEOUT_S)
        if events and isinstance(events[0], Task):
            waiting = events[0].id
        c.check(name, shape(events)[:1] == ['task'] and ends_final(events, TaskState.input_required),
                f'events={shape(events)}')
    except TimeoutError:
        c.check(name, False, f'the stream did not close within {TIMEOUT_S:.0f} s')
    except Exception as e:  # noqa: BLE001
        c.error(name, e)

    # 3. tasks/resubscribe on the waiting task, then the answer: its events, until final.
    name = ('tasks/resubscribe on the input-required task -> (its Task,) then the answer\'s '
            'updates, last a final completed status update, then the stream closes')
    if not waiting:
        c.check(name, False, 'no waiting task from step 2')
    else:
        sub = asyncio.create_task(collect(client.resubscribe(TaskIdParams(id=waiting))))
        try:
            # The subscription must be in place before the answer is sent. A server that sends
            # the Task first is ready once that arrived; otherwise give it a moment.
            await asyncio.sleep(1.0)
            if sub.done():
                raise AssertionError(f'the resubscribe stream ended before the answer: '
                                     f'{shape(sub.result()) if not sub.exception() else repr(sub.exception())}')
            answer = await asyncio.wait_for(
                collect(client.send_message(text_message(
                    f'tck-stream-artifact-chunked-{suffix}-2', 'finish', task_id=waiting))),
                TIMEOUT_S)
            events = await asyncio.wait_for(sub, TIMEOUT_S)
            kinds = shape(events)
            updates = events[1:] if events and isinstance(events[0], Task) else events
            first_ok = not (events and isinstance(events[0], Task)) or (
                events[0].id == waiting and events[0].status.state == TaskState.input_required)
            c.check(
                name,
                first_ok and 'artifact-update' in shape(updates) and ends_final(updates, TaskState.completed)
                and all(getattr(e, 'task_id', None) == waiting for e in updates)
                and ends_final(answer, TaskState.completed),
                f'resubscribe={kinds} answer={shape(answer)}',
            )
        except Exception as e:  # noqa: BLE001
            c.error(name, e)
        finally:
            sub.cancel()

    # 4. Refusals.
    name = {'jsonrpc': 'tasks/resubscribe unknown id -> TaskNotFound (JSON-RPC -32001)',
            'http_json': 'tasks/resubscribe unknown id -> TaskNotFound (HTTP 404)',
            'grpc': 'tasks/resubscribe unknown id -> TaskNotFound (gRPC NOT_FOUND)'}[binding]
    unknown = f'no-such-task-{uuid.uuid4()}'
    try:
        events = await asyncio.wait_for(collect(client.resubscribe(TaskIdParams(id=unknown))), TIMEOUT_S)
        c.check(name, False, f'no error, got {shape(events)}')
    except A2AClientJSONRPCError as e:
        c.check(name, binding == 'jsonrpc' and e.error.code == -32001, f'JSON-RPC {e.error.code}: {e.error.message}')
    except A2AClientHTTPError as e:
        # The 0.3 Python REST client does not check the status of a subscribe reply: any
        # non-SSE answer surfaces as "HTTP 400 Invalid SSE response". Ask the server directly.
        status = await subscribe_status(http, iface_url, unknown)
        c.check(name, binding == 'http_json' and status == 404,
                f'SDK: {e}; GET/POST /v1/tasks/{{id}}:subscribe -> {status}')
    except grpc.aio.AioRpcError as e:
        c.check(name, binding == 'grpc' and e.code() == grpc.StatusCode.NOT_FOUND, f'{e.code().name}: {e.details()}')
    except Exception as e:  # noqa: BLE001
        c.error(name, e)

    name = 'tasks/resubscribe on a completed task -> an error, or its Task and the end'
    if not finished:
        c.check(name, False, 'no finished task from step 1')
    else:
        try:
            events = await asyncio.wait_for(collect(client.resubscribe(TaskIdParams(id=finished))), TIMEOUT_S)
            c.check(name, len(events) == 1 and isinstance(events[0], Task)
                    and events[0].status.state in TERMINAL, f'events={shape(events)}')
        except (A2AClientJSONRPCError, A2AClientHTTPError, grpc.aio.AioRpcError) as e:
            c.check(name, True, f'{type(e).__name__}: {e}')
        except Exception as e:  # noqa: BLE001
            c.error(name, e)


async def subscribe_status(http: httpx.AsyncClient, iface_url: str, task_id: str) -> str:
    """The HTTP status of GET and POST <iface>/v1/tasks/{id}:subscribe."""
    out = []
    for method in ('GET', 'POST'):
        try:
            async with http.stream(method, f'{iface_url.rstrip("/")}/v1/tasks/{task_id}:subscribe') as r:
                out.append(r.status_code)
        except httpx.HTTPError as e:
            out.append(type(e).__name__)
    return out[0] if len(set(out)) == 1 else out


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
