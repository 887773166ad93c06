"""An upstream A2A agent on the official Python SDK's last 0.3 release (a2a-sdk 0.3.x, protocol
0.3), served on JSON-RPC at 127.0.0.1:PORT; the same verbs as agent_v1.py (see there):
echo, reply, ask, chunks N, slow SECS, wait, fail.

Usage: agent_v03.py PORT [--no-streaming] [--legacy-card]
  --legacy-card   the card only at /.well-known/agent.json (the 0.2 path), not agent-card.json
"""

import asyncio
import sys

import uvicorn

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part, TaskState, TextPart
from a2a.utils import new_agent_text_message, new_task


def text_of(message) -> str:
    return ' '.join(p.root.text for p in message.parts if isinstance(p.root, TextPart)).strip()


def text(t: str) -> list[Part]:
    return [Part(root=TextPart(text=t))]


class Steered(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        words = text_of(context.message).split()
        verb, rest = (words[0], ' '.join(words[1:])) if words else ('', '')
        if task is not None and task.status.state == TaskState.input_required:
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.start_work()
            await updater.add_artifact(text(f'hello {text_of(context.message)}'), artifact_id='greeting')
            await updater.complete()
            return
        if verb == 'reply':
            await event_queue.enqueue_event(new_agent_text_message(f'reply: {rest}'))
            return
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        if verb == 'echo':
            await updater.add_artifact(text(f'echo: {rest}'), artifact_id='echo', last_chunk=True)
            await updater.complete()
        elif verb == 'ask':
            await updater.requires_input(updater.new_agent_message(text('what is your name?')), final=True)
        elif verb == 'chunks':
            n = int(rest or '3')
            for i in range(n):
                await updater.add_artifact(
                    text(f'chunk-{i + 1} '), artifact_id='chunked', append=i > 0, last_chunk=i == n - 1,
                )
                await asyncio.sleep(0.05)
            await updater.complete()
        elif verb == 'slow':
            steps = int(float(rest or '2') * 2)
            for i in range(steps):
                await asyncio.sleep(0.5)
                await updater.add_artifact(text(f'tick-{i + 1} '), artifact_id='progress', append=i > 0)
            await updater.complete(updater.new_agent_message(text(f'done after {steps} ticks')))
        elif verb == 'wait':
            while True:
                await asyncio.sleep(0.2)
        elif verb == 'fail':
            await updater.failed(updater.new_agent_message(text('it went wrong upstream')))
        else:
            await updater.complete(updater.new_agent_message(text(f'unknown verb {verb!r}')))

    async def cancel(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.cancel()


def main() -> None:
    port = int(sys.argv[1])
    card = AgentCard(
        name='steered-v03',
        description='a2a-sdk 0.3 test agent steered by its first word',
        version='0.3.0',
        url=f'http://127.0.0.1:{port}/',
        preferred_transport='JSONRPC',
        protocol_version='0.3.0',
        capabilities=AgentCapabilities(streaming='--no-streaming' not in sys.argv),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(id='steered03', name='steered03', description='does what its first word says', tags=['test'])],
    )
    handler = DefaultRequestHandler(agent_executor=Steered(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler)
    card_url = '/.well-known/agent.json' if '--legacy-card' in sys.argv else '/.well-known/agent-card.json'
    uvicorn.run(app.build(agent_card_url=card_url), host='127.0.0.1', port=port, log_level='warning')


if __name__ == '__main__':
    main()
