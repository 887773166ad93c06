#!/usr/bin/env node
// Streaming interop: the official JavaScript client (@a2a-js/sdk 1.x) streaming from a running
// taskledger server — `sendMessageStream` (SendStreamingMessage) and `resubscribeTask`
// (SubscribeToTask), on the SDK's JSON-RPC or HTTP+JSON transport.
//
// Usage: node streaming.mjs <base-url> [--transport jsonrpc|http_json]
//
// The card is resolved by the SDK's DefaultAgentCardResolver and the client built by its
// ClientFactory with only the chosen transport. Prints one PASS/FAIL line per check and finally
// `N passed, M failed`; exits 1 if any check failed (2 on a usage error).

import { randomUUID } from 'node:crypto';

import { Role, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';

const TIMEOUT_MS = 30_000;
const SETTLE_MS = 10_000;
const FINISHED = [
  'statusUpdate:TASK_STATE_WORKING',
  'artifactUpdate',
  'artifactUpdate',
  'statusUpdate:TASK_STATE_COMPLETED',
];

class Checks {
  passed = 0;
  failed = 0;

  check(name, ok, detail = '') {
    if (ok) {
      this.passed += 1;
      console.log(`PASS ${name}`);
    } else {
      this.failed += 1;
      const line = String(detail).split(/\s+/).join(' ').trim();
      console.log(`FAIL ${name}${line ? `: ${line}` : ''}`);
    }
    return Boolean(ok);
  }

  error(name, e) {
    return this.check(name, false, describeError(e));
  }
}

function describeError(e) {
  if (!(e instanceof Error)) return String(e);
  const extra = [];
  if (e.envelopeCode !== undefined) extra.push(`code=${e.envelopeCode}`);
  if (e.statusCode !== undefined) extra.push(`status=${e.statusCode}`);
  return `${e.name}: ${e.message}${extra.length ? ` (${extra.join(' ')})` : ''}`;
}

const opts = (serviceParameters) => ({ signal: AbortSignal.timeout(TIMEOUT_MS), serviceParameters });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function textMessage({ messageId, text, taskId = '' }) {
  return {
    messageId,
    contextId: '',
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function sendRequest(message) {
  return {
    tenant: '',
    message,
    configuration: {
      acceptedOutputModes: ['text/plain'],
      taskPushNotificationConfig: undefined,
      historyLength: undefined,
      returnImmediately: false,
    },
    metadata: undefined,
  };
}

const subscribeRequest = (id) => ({ tenant: '', id });

/** `task`, `message`, `statusUpdate:<state>`, `artifactUpdate` for each event. */
function shape(events) {
  return events.map((e) => {
    const p = e.payload;
    if (p?.$case === 'statusUpdate') return `statusUpdate:${taskStateToJSON(p.value.status?.state)}`;
    return p?.$case ?? '?';
  });
}

function fromWorking(events) {
  const kinds = shape(events);
  while (kinds.length && ['task', 'statusUpdate:TASK_STATE_SUBMITTED'].includes(kinds[0])) kinds.shift();
  return kinds;
}

async function collect(stream) {
  const out = [];
  for await (const e of stream) out.push(e);
  return out;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function run(baseUrl, mode, c) {
  baseUrl = baseUrl.replace(/\/+$/, '');
  const resolver = new DefaultAgentCardResolver();
  let card;
  try {
    card = await resolver.resolve(baseUrl);
  } catch (e) {
    c.error('agent card resolves', e);
    return;
  }
  c.check(
    'agent card declares capabilities.streaming',
    card.capabilities?.streaming === true,
    `capabilities=${JSON.stringify(card.capabilities)}`,
  );
  const transports = mode === 'http_json' ? [new RestTransportFactory()] : [new JsonRpcTransportFactory()];
  let client;
  try {
    client = await new ClientFactory({ transports, cardResolver: resolver }).createFromAgentCard(card);
  } catch (e) {
    c.error(`client created from card (--transport ${mode})`, e);
    return;
  }
  c.check(`client created from card (--transport ${mode}): ${client.transport.protocolName}`, true);
  const suffix = randomUUID().replaceAll('-', '').slice(0, 12);

  // 1. sendMessageStream: the Task, then every update as stored, then the end.
  let finished = '';
  let name = 'sendMessageStream tck-stream-artifact-chunked -> Task, WORKING, 2 chunks, COMPLETED';
  try {
    const events = await collect(
      client.sendMessageStream(
        sendRequest(textMessage({ messageId: `tck-stream-artifact-chunked-${suffix}`, text: 'chunks' })),
        opts(),
      ),
    );
    if (events[0]?.payload?.$case === 'task') finished = events[0].payload.value.id;
    const chunks = events.filter((e) => e.payload?.$case === 'artifactUpdate').map((e) => e.payload.value);
    const texts = chunks.flatMap((a) => a.artifact.parts.map((p) => p.content?.value));
    const flags = chunks.map((a) => [a.append, a.lastChunk]);
    c.check(
      name,
      shape(events)[0] === 'task' &&
        same(fromWorking(events), FINISHED) &&
        same(texts, ['chunk-1 ', 'chunk-2']) &&
        same(flags, [
          [false, false],
          [true, true],
        ]),
      `events=${JSON.stringify(shape(events))} texts=${JSON.stringify(texts)} flags=${JSON.stringify(flags)}`,
    );
  } catch (e) {
    c.error(name, e);
  }

  // 2. A streamed send ends where the task waits for input.
  let waiting = '';
  name = 'sendMessageStream tck-input-required -> ends at TASK_STATE_INPUT_REQUIRED';
  try {
    const events = await collect(
      client.sendMessageStream(
        sendRequest(textMessage({ messageId: `tck-input-required-${suffix}`, text: 'ask me' })),
        opts(),
      ),
    );
    if (events[0]?.payload?.$case === 'task') waiting = events[0].payload.value.id;
    const kinds = shape(events);
    c.check(
      name,
      kinds[0] === 'task' && kinds.at(-1) === 'statusUpdate:TASK_STATE_INPUT_REQUIRED',
      `events=${JSON.stringify(kinds)}`,
    );
  } catch (e) {
    c.error(name, e);
  }

  // 3. A direct Message reply: one message event.
  name = 'sendMessageStream tck-message-response -> one Message event';
  try {
    const events = await collect(
      client.sendMessageStream(
        sendRequest(textMessage({ messageId: `tck-message-response-${suffix}`, text: 'hi' })),
        opts(),
      ),
    );
    c.check(
      name,
      same(shape(events), ['message']) && events[0].payload.value.role === Role.ROLE_AGENT,
      `events=${JSON.stringify(shape(events))}`,
    );
  } catch (e) {
    c.error(name, e);
  }

  // 4. resubscribeTask on the waiting task: its Task first; the answer's updates; the end.
  name = 'resubscribeTask on the waiting task -> Task first, the answer\'s updates, closes at COMPLETED';
  if (!waiting) {
    c.check(name, false, 'no waiting task from step 2');
  } else {
    try {
      const sub = client.resubscribeTask(subscribeRequest(waiting), opts());
      const first = (await sub.next()).value;
      const answer = await client.sendMessage(
        sendRequest(
          textMessage({ messageId: `tck-stream-artifact-chunked-${suffix}-2`, text: 'finish', taskId: waiting }),
        ),
        opts(),
      );
      const rest = await collect(sub);
      c.check(
        name,
        first?.payload?.$case === 'task' &&
          first.payload.value.id === waiting &&
          first.payload.value.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED &&
          same(fromWorking(rest), FINISHED) &&
          answer.status?.state === TaskState.TASK_STATE_COMPLETED,
        `first=${JSON.stringify(shape([first]))} rest=${JSON.stringify(shape(rest))}`,
      );
    } catch (e) {
      c.error(name, e);
    }
  }

  // 5. Resuming a finished task from the start (Last-Event-ID 0): its updates, no Task.
  name = 'resubscribeTask with Last-Event-ID 0 on a finished task -> its updates once, no Task';
  if (!finished) {
    c.check(name, false, 'no task from step 1');
  } else {
    try {
      const events = await collect(client.resubscribeTask(subscribeRequest(finished), opts({ 'Last-Event-ID': '0' })));
      c.check(
        name,
        !shape(events).includes('task') && same(fromWorking(events), FINISHED),
        `events=${JSON.stringify(shape(events))}`,
      );
    } catch (e) {
      c.error(name, e);
    }
  }

  // 6. A client that stops reading does not cancel the task.
  name = 'sendMessageStream abandoned after the Task -> the task completes anyway';
  try {
    let id = '';
    for await (const e of client.sendMessageStream(
      sendRequest(textMessage({ messageId: `tck-delayed-complete-${suffix}`, text: 'slow' })),
      opts(),
    )) {
      if (e.payload?.$case === 'task') id = e.payload.value.id;
      break;
    }
    let state = '';
    const deadline = Date.now() + SETTLE_MS;
    while (id && state !== 'TASK_STATE_COMPLETED' && Date.now() < deadline) {
      await sleep(50);
      const t = await client.getTask({ tenant: '', id, historyLength: undefined }, opts());
      state = taskStateToJSON(t.status?.state);
    }
    c.check(name, state === 'TASK_STATE_COMPLETED', `id=${id} state=${state}`);
  } catch (e) {
    c.error(name, e);
  }

  // 7. Refusals before the stream, as the SDK's errors.
  const refused = async (what, ok, stream) => {
    try {
      const events = await collect(stream);
      c.check(what, false, `no error, got ${JSON.stringify(shape(events))}`);
    } catch (e) {
      c.check(what, ok(e), describeError(e));
    }
  };
  await refused(
    'resubscribeTask unknown id -> TaskNotFoundError',
    (e) => e instanceof TaskNotFoundError,
    client.resubscribeTask(subscribeRequest(`no-such-task-${randomUUID()}`), opts()),
  );
  if (finished) {
    await refused(
      'resubscribeTask on a finished task -> UnsupportedOperationError',
      (e) => e instanceof UnsupportedOperationError,
      client.resubscribeTask(subscribeRequest(finished), opts()),
    );
    await refused(
      'resubscribeTask with Last-Event-ID abc -> invalid params (JSON-RPC -32602 / HTTP 400)',
      (e) => (mode === 'http_json' ? e.statusCode === 400 : e.envelopeCode === -32602),
      client.resubscribeTask(subscribeRequest(finished), opts({ 'Last-Event-ID': 'abc' })),
    );
  }
  await refused(
    'sendMessageStream to an unknown task -> TaskNotFoundError',
    (e) => e instanceof TaskNotFoundError,
    client.sendMessageStream(
      sendRequest(textMessage({ messageId: `m-${suffix}`, text: 'x', taskId: `no-such-task-${randomUUID()}` })),
      opts(),
    ),
  );
}

async function main(argv) {
  const args = [...argv];
  let mode = 'jsonrpc';
  const t = args.findIndex((a) => a === '--transport' || a.startsWith('--transport='));
  if (t >= 0) {
    mode = args[t].includes('=') ? args[t].split('=')[1] : args[t + 1];
    args.splice(t, args[t].includes('=') ? 1 : 2);
  }
  if (args.length !== 1 || !['jsonrpc', 'http_json'].includes(mode)) {
    console.error('usage: node streaming.mjs <base-url> [--transport jsonrpc|http_json]');
    return 2;
  }
  const c = new Checks();
  try {
    await run(args[0], mode, c);
  } catch (e) {
    console.error(e);
    c.error('unexpected error', e);
  }
  console.log(`${c.passed} passed, ${c.failed} failed`);
  return c.failed ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
