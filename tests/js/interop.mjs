#!/usr/bin/env node
// Black-box A2A 1.0 interop test: the official JavaScript client (@a2a-js/sdk 1.x) against a
// running taskledger server.
//
// Usage: node interop.mjs <base-url> [--transport auto|jsonrpc|http_json]
//
// The agent card is fetched from <base-url>/.well-known/agent-card.json by the SDK's
// DefaultAgentCardResolver and the client is built by its ClientFactory, as a user would.
// `auto` (the default) lets the factory pick from what the card offers (the SDK's JSON-RPC and
// HTTP+JSON transports, in card order); `jsonrpc` / `http_json` give the factory only that
// transport. Prints one PASS/FAIL line per check and finally `N passed, M failed`; exits 1 if
// any check failed (2 on a usage error).

import http from 'node:http';
import { randomUUID } from 'node:crypto';

import { Role, StreamResponse, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';

const TIMEOUT_MS = 30_000;
const SETTLE_MS = 10_000;
const BINDINGS = { jsonrpc: 'JSONRPC', http_json: 'HTTP+JSON' };
// A2A 1.0.1 error table (the one taskledger follows on every binding).
const ERROR_CODES = {
  TaskNotFoundError: { jsonrpc: -32001, rest: 404 },
  TaskNotCancelableError: { jsonrpc: -32002, rest: 400 },
};

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
  if (e.transport) extra.push(`transport=${e.transport}`);
  if (e.envelopeCode !== undefined) extra.push(`code=${e.envelopeCode}`);
  if (e.statusCode !== undefined) extra.push(`status=${e.statusCode}`);
  if (e.reason) extra.push(`reason=${e.reason}`);
  return `${e.name}: ${e.message}${extra.length ? ` (${extra.join(' ')})` : ''}`;
}

/** The wire code of an SDK error: the JSON-RPC error code or the HTTP status. */
function wireCode(e) {
  return e?.transport === 'rest' ? e.statusCode : e?.envelopeCode;
}

const stateName = (task) => taskStateToJSON(task?.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED);
const isTask = (result) => Boolean(result) && !('messageId' in result) && 'status' in result;
const texts = (parts) => (parts ?? []).filter((p) => p.content?.$case === 'text').map((p) => p.content.value);
const historyTexts = (task) => (task.history ?? []).flatMap((m) => texts(m.parts));
const opts = () => ({ signal: AbortSignal.timeout(TIMEOUT_MS) });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const TERMINAL = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

// Request objects are written in full, as the SDK's TypeScript types require (its toJSON sends
// e.g. `"status":"UNRECOGNIZED"` for a ListTasksRequest without a status).
function textMessage({ messageId, text, taskId = '', contextId = '' }) {
  return {
    messageId,
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function sendRequest(message, { returnImmediately = false } = {}) {
  return {
    tenant: '',
    message,
    configuration: {
      acceptedOutputModes: ['text/plain'],
      taskPushNotificationConfig: undefined,
      historyLength: undefined,
      returnImmediately,
    },
    metadata: undefined,
  };
}

function listRequest(fields) {
  return {
    tenant: '',
    contextId: '',
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageSize: undefined,
    pageToken: '',
    historyLength: undefined,
    statusTimestampAfter: undefined,
    includeArtifacts: undefined,
    ...fields,
  };
}

/** Records every request the SDK makes (the card fetch included) and passes it to fetch. */
function recordingFetch(seen) {
  return (input, init) => {
    const url = input instanceof URL ? input.href : typeof input === 'string' ? input : input.url;
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    let rpcMethod;
    if (typeof init?.body === 'string') {
      try {
        rpcMethod = JSON.parse(init.body).method;
      } catch {
        // not JSON: nothing to note
      }
    }
    seen.push({ method: init?.method ?? 'GET', url, version: headers.get('A2A-Version'), rpcMethod });
    return fetch(input, init);
  };
}

/** A webhook receiver on 127.0.0.1 (the local server's default push allowlist has loopback). */
async function startReceiver() {
  const deliveries = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      deliveries.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/hooks/js-interop`,
    deliveries,
    close: () => {
      server.closeAllConnections?.();
      server.close();
    },
  };
}

/** The interface the SDK's factory selects for a binding: the 1.0 one, else the first. */
function interfaceFor(card, binding) {
  const matching = (card.supportedInterfaces ?? []).filter(
    (i) => i.protocolBinding?.toUpperCase() === binding.toUpperCase(),
  );
  return matching.find((i) => i.protocolVersion === '1.0') ?? matching[0];
}

async function run(baseUrl, mode, c) {
  baseUrl = baseUrl.replace(/\/+$/, '');
  const seen = [];
  const fetchImpl = recordingFetch(seen);

  // 1. The agent card, through the SDK's resolver.
  const resolver = new DefaultAgentCardResolver({ fetchImpl });
  let card;
  try {
    card = await resolver.resolve(baseUrl);
  } catch (e) {
    c.error('agent card resolves', e);
    return;
  }
  c.check('agent card resolves', true);
  const ifaces = (card.supportedInterfaces ?? []).map((i) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`);
  console.log(`card interfaces: ${ifaces.join(' | ') || '(none)'}`);
  c.check(
    'agent card has a JSONRPC 1.0 interface at <base>/a2a',
    (card.supportedInterfaces ?? []).some(
      (i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion === '1.0' && i.url === `${baseUrl}/a2a`,
    ),
    `supportedInterfaces=${JSON.stringify(card.supportedInterfaces)}`,
  );
  c.check(
    'agent card declares capabilities.pushNotifications',
    card.capabilities?.pushNotifications === true,
    `capabilities=${JSON.stringify(card.capabilities)}`,
  );

  // 2. The client, through the SDK's factory. `auto` is the SDK's default transport list (JSON-RPC
  // and HTTP+JSON), given our recording fetch; the card's order decides.
  const factories = {
    jsonrpc: () => [new JsonRpcTransportFactory({ fetchImpl })],
    http_json: () => [new RestTransportFactory({ fetchImpl })],
    auto: () => [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
  };
  const factory =
    mode === 'auto'
      ? new ClientFactory(
          ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
            transports: factories.auto(),
            cardResolver: resolver,
          }),
        )
      : new ClientFactory({ transports: factories[mode](), cardResolver: resolver });
  const supported = new Set(Object.values(BINDINGS));
  const expected =
    mode === 'auto'
      ? (card.supportedInterfaces ?? []).map((i) => i.protocolBinding?.toUpperCase()).find((b) => supported.has(b))
      : BINDINGS[mode];
  const clientName = `client created from card (--transport ${mode})`;
  let client;
  try {
    client = await factory.createFromAgentCard(card);
  } catch (e) {
    const offered = (card.supportedInterfaces ?? []).map((i) => i.protocolBinding);
    c.check(clientName, false, `${describeError(e)}; the card offers ${JSON.stringify(offered)}`);
    return;
  }
  const chosen = client.transport.protocolName;
  const iface = interfaceFor(card, chosen);
  console.log(`transport: ${chosen} at ${iface?.url} (A2A-Version ${client.protocolVersion})`);
  c.check(
    clientName,
    chosen.toUpperCase() === expected && iface !== undefined,
    `chose ${chosen}, expected ${expected}`,
  );
  const cardRequests = seen.length;

  const suffix = randomUUID().replaceAll('-', '').slice(0, 12);
  const completeText = `js interop complete ${suffix}`;
  const inputText = `js interop input-required ${suffix}`;
  const followText = `js interop follow-up ${suffix}`;
  const cancelText = `js interop to cancel ${suffix}`;
  let completed;
  let waiting;
  let continued;
  let toCancel;

  // 3. Blocking SendMessage -> COMPLETED with an artifact.
  let name = 'SendMessage (blocking) tck-complete-task -> TASK_STATE_COMPLETED with an artifact';
  try {
    const result = await client.sendMessage(
      sendRequest(textMessage({ messageId: `tck-complete-task-${suffix}`, text: completeText })),
      opts(),
    );
    if (isTask(result)) completed = result;
    const artifactTexts = (result.artifacts ?? []).flatMap((a) => texts(a.parts));
    c.check(
      name,
      isTask(result) &&
        result.id &&
        result.contextId &&
        result.status?.state === TaskState.TASK_STATE_COMPLETED &&
        artifactTexts.length > 0,
      `task=${isTask(result)} id=${result.id} state=${stateName(result)} artifacts=${JSON.stringify(artifactTexts)}`,
    );
  } catch (e) {
    c.error(name, e);
  }
  const contextId = completed?.contextId ?? '';

  // 4. returnImmediately SendMessage (same context) -> a Task at once, INPUT_REQUIRED soon after.
  name = 'SendMessage returnImmediately tck-input-required -> a Task at once, in the given context';
  try {
    const started = Date.now();
    const result = await client.sendMessage(
      sendRequest(textMessage({ messageId: `tck-input-required-${suffix}`, text: inputText, contextId }), {
        returnImmediately: true,
      }),
      opts(),
    );
    const ms = Date.now() - started;
    if (isTask(result)) waiting = result;
    c.check(
      name,
      isTask(result) && result.id && result.contextId === contextId && !TERMINAL.has(result.status?.state),
      `task=${isTask(result)} id=${result.id} state=${stateName(result)} contextId=${result.contextId} ` +
        `(wanted ${contextId}) in ${ms} ms`,
    );
  } catch (e) {
    c.error(name, e);
  }
  name = 'returnImmediately task reaches TASK_STATE_INPUT_REQUIRED (GetTask polling)';
  if (!waiting) {
    c.check(name, false, 'no task from the previous step');
  } else {
    try {
      const deadline = Date.now() + SETTLE_MS;
      let got = waiting;
      let polls = 0;
      while (got.status?.state !== TaskState.TASK_STATE_INPUT_REQUIRED && Date.now() < deadline) {
        await sleep(50);
        got = await client.getTask({ tenant: '', id: waiting.id, historyLength: undefined }, opts());
        polls += 1;
      }
      c.check(
        name,
        got.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED,
        `state=${stateName(got)} after ${polls} polls`,
      );
    } catch (e) {
      c.error(name, e);
    }
  }

  // 5. A follow-up message to that task continues it (same task; the agent completes it).
  name = 'SendMessage follow-up with taskId continues the input-required task -> TASK_STATE_COMPLETED';
  if (!waiting) {
    c.check(name, false, 'no task from the previous steps');
  } else {
    try {
      const result = await client.sendMessage(
        sendRequest(
          textMessage({
            messageId: `js-follow-up-${suffix}`,
            text: followText,
            taskId: waiting.id,
            contextId: waiting.contextId,
          }),
        ),
        opts(),
      );
      if (isTask(result)) continued = result;
      c.check(
        name,
        isTask(result) && result.id === waiting.id && result.status?.state === TaskState.TASK_STATE_COMPLETED,
        `task=${isTask(result)} id=${result.id} (wanted ${waiting.id}) state=${stateName(result)}`,
      );
    } catch (e) {
      c.error(name, e);
    }
  }

  // 6. GetTask and historyLength.
  if (!continued) {
    c.check('GetTask historyLength checks', false, 'no continued task from the previous step');
  } else {
    let full;
    name = 'GetTask (no historyLength) -> the whole history, both user messages in order';
    try {
      full = await client.getTask({ tenant: '', id: continued.id, historyLength: undefined }, opts());
      const all = historyTexts(full);
      const i = all.indexOf(inputText);
      const j = all.indexOf(followText);
      c.check(
        name,
        full.id === continued.id && i >= 0 && j > i,
        `id=${full.id} history=${full.history.length} texts=${JSON.stringify(all)}`,
      );
    } catch (e) {
      c.error(name, e);
    }
    name = 'GetTask historyLength=1 -> only the newest message';
    try {
      const got = await client.getTask({ tenant: '', id: continued.id, historyLength: 1 }, opts());
      const newest = full?.history?.at(-1)?.messageId;
      c.check(
        name,
        got.history.length === 1 && got.history[0].messageId === newest,
        `history=${JSON.stringify(got.history.map((m) => m.messageId))} newest=${newest}`,
      );
    } catch (e) {
      c.error(name, e);
    }
    name = 'GetTask historyLength=0 -> no history';
    try {
      const got = await client.getTask({ tenant: '', id: continued.id, historyLength: 0 }, opts());
      c.check(name, got.history.length === 0, `history=${got.history.length}`);
    } catch (e) {
      c.error(name, e);
    }
  }

  // 7. A third task in the context, blocking until INPUT_REQUIRED: for push configs and cancel.
  name = 'SendMessage (blocking) tck-input-required -> TASK_STATE_INPUT_REQUIRED';
  try {
    const result = await client.sendMessage(
      sendRequest(textMessage({ messageId: `tck-input-required-${suffix}-2`, text: cancelText, contextId })),
      opts(),
    );
    if (isTask(result)) toCancel = result;
    c.check(
      name,
      isTask(result) && result.contextId === contextId && result.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED,
      `task=${isTask(result)} id=${result.id} state=${stateName(result)}`,
    );
  } catch (e) {
    c.error(name, e);
  }

  // 8. ListTasks: contextId filter with pageSize=1 and nextPageToken; status filter.
  const wanted = [toCancel?.id, continued?.id, completed?.id]; // newest status first
  name = 'ListTasks contextId filter, pageSize=1, following nextPageToken -> the 3 tasks, 1 per page';
  if (!contextId || wanted.some((id) => !id)) {
    c.check(name, false, 'no tasks from the previous steps');
  } else {
    try {
      const ids = [];
      const pages = [];
      let token = '';
      do {
        const page = await client.listTasks(listRequest({ contextId, pageSize: 1, pageToken: token }), opts());
        pages.push(
          `{tasks=${page.tasks.length} pageSize=${page.pageSize} totalSize=${page.totalSize} next=${page.nextPageToken ? 'yes' : "''"}}`,
        );
        ids.push(...page.tasks.map((t) => t.id));
        const ok = page.tasks.length === 1 && page.totalSize === 3 && page.pageSize === 1 &&
          page.tasks.every((t) => t.contextId === contextId);
        if (!ok) break;
        token = page.nextPageToken;
      } while (token && pages.length < 10);
      c.check(
        name,
        pages.length === 3 && !token && ids.length === 3 && new Set(ids).size === 3 && wanted.every((id) => ids.includes(id)),
        `pages=${pages.join(' ')} ids=${JSON.stringify(ids)}`,
      );
      c.check(
        'ListTasks order: most recently updated first',
        JSON.stringify(ids) === JSON.stringify(wanted),
        `got ${JSON.stringify(ids)} wanted ${JSON.stringify(wanted)}`,
      );
    } catch (e) {
      c.error(name, e);
    }
    name = 'ListTasks contextId + status=TASK_STATE_INPUT_REQUIRED filter -> only the waiting task';
    try {
      const page = await client.listTasks(
        listRequest({ contextId, status: TaskState.TASK_STATE_INPUT_REQUIRED }),
        opts(),
      );
      const ids = page.tasks.map((t) => t.id);
      c.check(
        name,
        ids.length === 1 && ids[0] === toCancel.id && page.totalSize === 1 && page.nextPageToken === '',
        `ids=${JSON.stringify(ids)} totalSize=${page.totalSize} nextPageToken=${JSON.stringify(page.nextPageToken)}`,
      );
    } catch (e) {
      c.error(name, e);
    }
  }

  // 9. Push notification configs on the waiting task: create (with and without an id), get,
  // list, delete (twice: idempotent), get of the deleted one; then the cancel below is delivered.
  const receiver = await startReceiver();
  const hookId = `js-hook-${suffix}`;
  const hookToken = `tok-${suffix}`;
  let pushReady = false;
  try {
    if (!toCancel) {
      c.check('push notification config checks', false, 'no input-required task from the previous steps');
    } else {
      pushReady = await pushConfigChecks(c, client, toCancel.id, receiver.url, hookId, hookToken);
    }

    // 10. CancelTask of the input-required task -> CANCELED (and the webhook hears of it).
    name = 'CancelTask input-required task -> TASK_STATE_CANCELED';
    if (!toCancel) {
      c.check(name, false, 'no task from the previous steps');
    } else {
      try {
        const canceled = await client.cancelTask({ tenant: '', id: toCancel.id, metadata: undefined }, opts());
        c.check(
          name,
          canceled.id === toCancel.id && canceled.status?.state === TaskState.TASK_STATE_CANCELED,
          `id=${canceled.id} state=${stateName(canceled)}`,
        );
      } catch (e) {
        c.error(name, e);
      }
      name = 'GetTask after cancel -> TASK_STATE_CANCELED';
      try {
        const got = await client.getTask({ tenant: '', id: toCancel.id, historyLength: undefined }, opts());
        c.check(name, got.status?.state === TaskState.TASK_STATE_CANCELED, `state=${stateName(got)}`);
      } catch (e) {
        c.error(name, e);
      }
      if (pushReady) {
        name = 'webhook received the CANCELED status update (StreamResponse, with the config token)';
        const deadline = Date.now() + SETTLE_MS;
        let hit;
        while (!hit && Date.now() < deadline) {
          hit = receiver.deliveries.find((d) => {
            try {
              const event = StreamResponse.fromJSON(JSON.parse(d.body)).payload;
              return (
                event?.$case === 'statusUpdate' &&
                event.value.taskId === toCancel.id &&
                event.value.status?.state === TaskState.TASK_STATE_CANCELED
              );
            } catch {
              return false;
            }
          });
          if (!hit) await sleep(50);
        }
        c.check(
          name,
          hit && hit.headers['x-a2a-notification-token'] === hookToken,
          hit
            ? `token=${hit.headers['x-a2a-notification-token']} content-type=${hit.headers['content-type']}`
            : `deliveries=${JSON.stringify(receiver.deliveries.map((d) => d.body.slice(0, 200)))}`,
        );
      }
    }
  } finally {
    receiver.close();
  }

  // 11. Cancel of a completed task -> TaskNotCancelableError.
  await expectError(c, 'CancelTask completed task', TaskNotCancelableError, () =>
    completed
      ? client.cancelTask({ tenant: '', id: completed.id, metadata: undefined }, opts())
      : Promise.reject(new Error('no completed task from step 3')),
  );

  // 12. GetTask of an unknown id -> TaskNotFoundError.
  await expectError(c, 'GetTask unknown id', TaskNotFoundError, () =>
    client.getTask({ tenant: '', id: `no-such-task-${randomUUID()}`, historyLength: undefined }, opts()),
  );

  // 13. What the SDK put on the wire.
  const calls = seen.slice(cardRequests);
  const badVersion = seen.filter((r) => r.version !== '1.0').map((r) => `${r.method} ${r.url}: ${r.version}`);
  c.check(
    'SDK sent A2A-Version: 1.0 on every request (the card fetch included)',
    seen.length > 0 && badVersion.length === 0,
    `requests=${seen.length} bad=${JSON.stringify(badVersion)}`,
  );
  const root = (iface?.url ?? '').replace(/\/+$/, '');
  const offTarget = calls
    .filter((r) => (chosen === 'JSONRPC' ? r.url !== iface?.url : r.url !== root && !r.url.startsWith(`${root}/`)))
    .map((r) => `${r.method} ${r.url}`);
  c.check(
    `SDK called only the card's ${chosen} interface URL`,
    calls.length > 0 && offTarget.length === 0,
    `other urls=${JSON.stringify(offTarget)}`,
  );
  const methods = [...new Set(calls.map((r) => r.rpcMethod ?? `${r.method} ${new URL(r.url).pathname}`))];
  console.log(`calls: ${calls.length} (${methods.length} distinct: ${methods.join(', ')})`);
}

async function pushConfigChecks(c, client, taskId, url, hookId, hookToken) {
  const config = (fields) => ({ tenant: '', id: '', taskId, url, token: '', authentication: undefined, ...fields });
  let name = 'CreateTaskPushNotificationConfig with an id -> the stored config';
  let created = false;
  try {
    const got = await client.createTaskPushNotificationConfig(config({ id: hookId, token: hookToken }), opts());
    created = c.check(
      name,
      got.id === hookId && got.taskId === taskId && got.url === url && got.token === hookToken,
      `got=${JSON.stringify(got)}`,
    );
  } catch (e) {
    c.error(name, e);
  }
  name = 'CreateTaskPushNotificationConfig without an id -> the server assigns one';
  let assigned = '';
  try {
    const got = await client.createTaskPushNotificationConfig(config({}), opts());
    assigned = got.id;
    c.check(name, got.id !== '' && got.id !== hookId && got.taskId === taskId && got.url === url, `got=${JSON.stringify(got)}`);
  } catch (e) {
    c.error(name, e);
  }
  name = 'GetTaskPushNotificationConfig -> the config';
  try {
    const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId, id: hookId }, opts());
    c.check(name, got.id === hookId && got.url === url && got.token === hookToken, `got=${JSON.stringify(got)}`);
  } catch (e) {
    c.error(name, e);
  }
  const list = () => client.listTaskPushNotificationConfig({ tenant: '', taskId, pageSize: 0, pageToken: '' }, opts());
  name = 'ListTaskPushNotificationConfigs -> both configs';
  try {
    const got = await list();
    const ids = got.configs.map((p) => p.id);
    c.check(
      name,
      ids.length === 2 && ids.includes(hookId) && ids.includes(assigned) && got.nextPageToken === '',
      `ids=${JSON.stringify(ids)} nextPageToken=${JSON.stringify(got.nextPageToken)}`,
    );
  } catch (e) {
    c.error(name, e);
  }
  name = 'DeleteTaskPushNotificationConfig, twice (idempotent) -> the list has the other config only';
  try {
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId, id: assigned }, opts());
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId, id: assigned }, opts());
    const ids = (await list()).configs.map((p) => p.id);
    c.check(name, ids.length === 1 && ids[0] === hookId, `ids=${JSON.stringify(ids)}`);
  } catch (e) {
    c.error(name, e);
  }
  await expectError(c, 'GetTaskPushNotificationConfig of the deleted config', TaskNotFoundError, () =>
    client.getTaskPushNotificationConfig({ tenant: '', taskId, id: assigned }, opts()),
  );
  return created;
}

/** Runs `call`, which must fail with the SDK's `errorClass` carrying the table's wire code. */
async function expectError(c, what, errorClass, call) {
  const codes = ERROR_CODES[errorClass.name];
  const name = `${what} -> ${errorClass.name} (JSON-RPC ${codes.jsonrpc} / HTTP ${codes.rest})`;
  try {
    const got = await call();
    c.check(name, false, `no error, got ${JSON.stringify(got).slice(0, 200)}`);
  } catch (e) {
    const want = e?.transport === 'rest' ? codes.rest : codes.jsonrpc;
    c.check(name, e instanceof errorClass && wireCode(e) === want, describeError(e));
  }
}

async function main(argv) {
  const args = [...argv];
  let mode = 'auto';
  const t = args.findIndex((a) => a === '--transport' || a.startsWith('--transport='));
  if (t >= 0) {
    mode = args[t].includes('=') ? args[t].split('=')[1] : args[t + 1];
    args.splice(t, args[t].includes('=') ? 1 : 2);
  }
  if (args.length !== 1 || !['auto', 'jsonrpc', 'http_json'].includes(mode)) {
    console.error('usage: node interop.mjs <base-url> [--transport auto|jsonrpc|http_json]');
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
