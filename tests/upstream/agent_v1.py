"""An upstream A2A agent on the official Python SDK (a2a-sdk 1.x, protocol lf.a2a.v1), served
on JSON-RPC at 127.0.0.1:PORT — the partner the upstream tests put behind taskledger
(`--agent-url`). Its tasks live in the SDK's in-memory store, like most SDK samples.

What it does is steered by the first word of the user's text:
  echo WORDS    a task: WORKING, one artifact "echo: WORDS", COMPLETED
  reply WORDS   no task: a direct message "reply: WORDS"
  ask           INPUT_REQUIRED "what is your name?"; the answer completes it: "hello NAME"
  chunks N      an artifact streamed in N chunks (append, the last marked lastChunk), COMPLETED
  slow SECS     WORKING, a chunk of artifact "progress" every 0.5 s for SECS seconds, COMPLETED
  wait          WORKING until canceled
  fail          FAILED with a message

Usage: agent_v1.py PORT [--no-streaming] [--skill NAME]
"""

import asyncio
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Role,
    TaskState,
)


def text_of(message) -> str:
    return ' '.join(p.text for p in message.parts if p.HasField('text')).strip()


class Steered(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        words = text_of(context.message).split()
        verb, rest = (words[0], ' '.join(words[1:])) if words else ('', '')
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.start_work()
            await updater.add_artifact([new_text_part(f'hello {text_of(context.message)}')], artifact_id='greeting')
            await updater.complete()
            return
        if verb == 'reply':
            await event_queue.enqueue_event(new_text_message(f'reply: {rest}', role=Role.ROLE_AGENT))
            return
        if task is None:
            task = new_task_from_user_message(context.message)
            task.id, task.context_id = context.task_id, context.context_id
            await event_queue.enqueue_event(task)
        await updater.start_work()
        if verb == 'echo':
            await updater.add_artifact([new_text_part(f'echo: {rest}')], artifact_id='echo', last_chunk=True)
            await updater.complete()
        elif verb == 'ask':
            await updater.requires_input(updater.new_agent_message([new_text_part('what is your name?')]))
        elif verb == 'chunks':
            n = int(rest or '3')
            for i in range(n):
                await updater.add_artifact(
                    [new_text_part(f'chunk-{i + 1} ')], artifact_id='chunked',
                    append=i > 0, last_chunk=i == n - 1,
                )
                await asyncio.sleep(0.05)
            await updater.complete()
        elif verb == 'slow':
            steps = int(float(rest or '2') * 2)
            for i in range(steps):
                await asyncio.sleep(0.5)
                await updater.add_artifact(
                    [new_text_part(f'tick-{i + 1} ')], artifact_id='progress', append=i > 0,
                )
            await updater.complete(updater.new_agent_message([new_text_part(f'done after {steps} ticks')]))
        elif verb == 'wait':
            while True:
                await asyncio.sleep(0.2)
        elif verb == 'fail':
            await updater.failed(updater.new_agent_message([new_text_part('it went wrong upstream')]))
        else:
            await updater.complete(updater.new_agent_message([new_text_part(f'unknown verb {verb!r}')]))

    async def cancel(self, context: RequestContext, event_queue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def main() -> None:
    port = int(sys.argv[1])
    streaming = '--no-streaming' not in sys.argv
    skill = sys.argv[sys.argv.index('--skill') + 1] if '--skill' in sys.argv else 'steered'
    card = AgentCard(
        name='steered-v1',
        description='a2a-sdk 1.x test agent steered by its first word',
        version='1.0.0',
        supported_interfaces=[AgentInterface(
            url=f'http://127.0.0.1:{port}/', protocol_binding='JSONRPC', protocol_version='1.0',
        )],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain', 'application/json'],
        skills=[AgentSkill(id=skill, name=skill, description='does what its first word says', tags=['test'])],
    )
    handler = DefaultRequestHandler(
        agent_executor=Steered(), task_store=InMemoryTaskStore(), agent_card=card,
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, '/')
    uvicorn.run(Starlette(routes=routes), host='127.0.0.1', port=port, log_level='warning')


if __name__ == '__main__':
    main()
