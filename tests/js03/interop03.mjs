#!/usr/bin/env node
// Black-box A2A 0.3 interop test: the official JavaScript client of protocol 0.3 (@a2a-js/sdk
// 0.3.14) against a running taskledger server.
//
// Usage: node interop03.mjs <base-url> [--transport auto|jsonrpc|http_json|grpc]
//
// The agent card is fetched from <base-url>/.well-known/agent-card.json by the SDK's
// DefaultAgentCardResolver and the client is built by its ClientFactory, which takes the URL of
// the transport from the card's `url`/`preferredTransport` and `additionalInterfaces`. `auto` (the
// default) gives the factory the SDK's default transports (JSON-RPC and HTTP+JSON) and lets the
// card's preference decide; `jsonrpc` / `http_json` / `grpc` give it only that one (`grpc` is the
// SDK's a2a.v1.A2AService client from '@a2a-js/sdk/client/grpc', insecure channel). Prints one
// PASS/FAIL line per check and finally `N passed, M failed`; exits 1 if any check failed (2 on a
// usage error).

import http from 'node:http';
import { randomUUID } from 'node:crypto';

import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransport,
  JsonRpcTransportFactory,
  RestTransportFactory,
  TaskNotCancelableError,
  TaskNotFoundError,
} from '@a2a-js/sdk/client';

const TIMEOUT_MS = 30_000;
const SETTLE_MS = 10_000;
const BINDINGS = { jsonrpc: 'JSONRPC', http_json: 'HTTP+JSON', grpc: 'GRPC' };
const TERMINAL = new Set(['completed', 'canceled', 'failed', 'rejected']);

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
  const code = e.errorResponse?.error?.code ?? e.cause?.errorResponse?.error?.code;
  const cause = e.cause instanceof Error ? ` (cause ${e.cause.name}: ${e.cause.message})` : '';
  return `${e.constructor.name}: ${e.message}${code !== undefined ? ` (code ${code})` : ''}${cause}`;
}

const opts = () => ({ signal: AbortSignal.timeout(TIMEOUT_MS) });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const isTask = (r) => r?.kind === 'task';
const texts = (parts) => (parts ?? []).filter((p) => p.kind === 'text').map((p) => p.text);
const userTexts = (task) => (task.history ?? []).filter((m) => m.role === 'user').flatMap((m) => texts(m.parts));
const describe = (r) => (isTask(r) ? `id=${r.id} kind=task state=${r.status?.state}` : `not a Task: ${JSON.stringify(r)?.slice(0, 200)}`);

function textMessage({ messageId, text, taskId, contextId }) {
  const m = { kind: 'message', messageId, role: 'user', parts: [{ kind: 'text', text }] };
  if (taskId) m.taskId = taskId;
  if (contextId) m.contextId = contextId;
  return m;
}

/** Records every request the SDK makes and the status / content type of each answer. */
function recordingFetch(seen) {
  return async (input, init) => {
    const url = input instanceof URL ? input.href : typeof input === 'string' ? input : input.url;
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    let rpcMethod;
    if (typeof init?.body === 'string') {
      try {
        rpcMethod = JSON.parse(init.body).method;
      } catch {
        // not JSON
      }
    }
    const entry = { method: init?.method ?? 'GET', url, headers: Object.fromEntries(headers), body: init?.body, rpcMethod };
    seen.push(entry);
    const res = await fetch(input, init);
    entry.status = res.status;
    entry.contentType = res.headers.get('content-type');
    if (!entry.contentType?.startsWith('text/event-stream')) {
      entry.responseText = await res.clone().text();
    }
    return res;
  };
}

/** A webhook receiver on 127.0.0.1 (a loopback URL, as the local server allows). */
async function startReceiver() {
  const deliveries = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      deliveries.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    deliveries,
    close: () => {
      server.closeAllConnections?.();
      server.close();
    },
  };
}

/** {TRANSPORT: url} as the 0.3 ClientFactory reads the card (later entries win). */
function cardInterfaces(card) {
  const out = new Map([[(card.preferredTransport ?? 'JSONRPC').toUpperCase(), card.url]]);
  for (const i of card.additionalInterfaces ?? []) out.set(String(i.transport).toUpperCase(), i.url);
  return out;
}

/** Collects a stream's events until the server closes it (or the time is up). */
async function collect(stream, ms = TIMEOUT_MS) {
  const events = [];
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the stream did not close within ${ms} ms`)), ms);
  });
  try {
    await Promise.race([
      (async () => {
        for await (const e of stream) events.push(structuredClone(e));
      })(),
      timeout,
    ]);
  } catch (e) {
    e.events = events;
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return events;
}

const shape = (events) =>
  events.map((e) =>
    e.kind === 'status-update' ? `status-update:${e.status?.state}${e.final ? '(final)' : ''}` : e.kind ?? '?',
  );

/** The last event is the only final status update, in `state`. */
function endsFinal(events, state) {
  const statuses = events.filter((e) => e.kind === 'status-update');
  const last = events.at(-1);
  return (
    last?.kind === 'status-update' &&
    last.final === true &&
    last.status?.state === state &&
    statuses.slice(0, -1).every((s) => !s.final)
  );
}

async function run(baseUrl, mode, c) {
  baseUrl = baseUrl.replace(/\/+$/, '');
  const seen = [];
  const fetchImpl = recordingFetch(seen);

  // 1. The card, through the SDK's resolver.
  const resolver = new DefaultAgentCardResolver({ fetchImpl });
  let card;
  try {
    card = await resolver.resolve(baseUrl);
  } catch (e) {
    c.error('agent card resolves', e);
    return;
  }
  c.check('agent card resolves', true);
  const offered = cardInterfaces(card);
  console.log(
    `card: protocolVersion=${card.protocolVersion} url=${card.url} preferredTransport=${card.preferredTransport} ` +
      `additionalInterfaces=${JSON.stringify(card.additionalInterfaces ?? [])}`,
  );
  c.check(
    "card protocolVersion starts with '0.3' and url is set",
    String(card.protocolVersion ?? '').startsWith('0.3') && Boolean(card.url),
    `protocolVersion=${card.protocolVersion} url=${card.url}`,
  );
  c.check(
    'card declares capabilities.streaming and capabilities.pushNotifications',
    card.capabilities?.streaming === true && card.capabilities?.pushNotifications === true,
    `capabilities=${JSON.stringify(card.capabilities)}`,
  );

  // 2. The client, through the SDK's factory.
  const factories = {
    jsonrpc: () => [new JsonRpcTransportFactory({ fetchImpl })],
    http_json: () => [new RestTransportFactory({ fetchImpl })],
  };
  let GrpcTransport;
  if (mode === 'grpc') {
    // Loaded only here: it needs the optional peers @grpc/grpc-js and @bufbuild/protobuf.
    const grpcClient = await import('@a2a-js/sdk/client/grpc');
    GrpcTransport = grpcClient.GrpcTransport;
    factories.grpc = () => [new grpcClient.GrpcTransportFactory()];
  }
  const factory =
    mode === 'auto'
      ? new ClientFactory(
          ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
            transports: [...factories.jsonrpc(), ...factories.http_json()],
          }),
        )
      : new ClientFactory({ transports: factories[mode]() });
  const supported = mode === 'auto' ? [BINDINGS.jsonrpc, BINDINGS.http_json] : [BINDINGS[mode]];
  // The factory's order: the card's preferred transport, then additionalInterfaces.
  const expected = [
    (card.preferredTransport ?? 'JSONRPC').toUpperCase(),
    ...(card.additionalInterfaces ?? []).map((i) => String(i.transport).toUpperCase()),
  ].find((t) => supported.includes(t));
  let client;
  const clientName = `ClientFactory builds a client from the card (--transport ${mode})`;
  try {
    client = await factory.createFromAgentCard(card);
  } catch (e) {
    c.check(clientName, false, `${describeError(e)}; the card offers ${JSON.stringify([...offered.keys()])}`);
    return;
  }
  const chosen =
    client.transport instanceof JsonRpcTransport
      ? 'JSONRPC'
      : GrpcTransport && client.transport instanceof GrpcTransport
        ? 'GRPC'
        : 'HTTP+JSON';
  // The gRPC client keeps its target inside the grpc-js channel.
  const endpoint =
    chosen === 'GRPC' ? client.transport.grpcClient.getChannel().getTarget().replace(/^dns:/, '') : client.transport.endpoint;
  console.log(`transport: ${chosen} at ${endpoint}`);
  c.check(
    clientName,
    chosen === expected && endpoint.replace(/\/+$/, '') === String(offered.get(chosen)).replace(/\/+$/, ''),
    `chose ${chosen} at ${endpoint}; expected ${expected} at ${offered.get(expected)}`,
  );
  const binding = { JSONRPC: 'jsonrpc', 'HTTP+JSON': 'rest', GRPC: 'grpc' }[chosen];
  const cardRequests = seen.length;

  await taskChecks(c, client, binding, seen);
  await streamChecks(c, client, binding, seen);
  if (binding === 'grpc') {
    client.transport.grpcClient.close();
    return;
  }

  // What the SDK put on the wire (informational).
  const calls = seen.slice(cardRequests);
  const paths = [
    ...new Set(
      calls.map((r) =>
        r.rpcMethod
          ? `POST ${new URL(r.url).pathname} ${r.rpcMethod}`
          : `${r.method} ${new URL(r.url).pathname
              .replace(/\/pushNotificationConfigs\/[^/]+$/, '/pushNotificationConfigs/{configId}')
              .replace(/\/tasks\/[^/:]+/, '/tasks/{id}')}${new URL(r.url).search}`,
      ),
    ),
  ].sort();
  console.log(`wire: ${calls.length} requests: ${paths.join(', ')}`);
  const headerNames = [...new Set(calls.flatMap((r) => Object.keys(r.headers)))].sort();
  console.log(`wire: request headers set by the SDK: ${headerNames.join(', ')}`);
}

// ----------------------------------------------------------------------------------------------
// Unary calls: send, get, cancel, push notification configs.

async function taskChecks(c, client, binding, seen) {
  const suffix = randomUUID().replaceAll('-', '').slice(0, 12);
  const inputText = `js03 input-required ${suffix}`;
  const followText = `js03 follow-up ${suffix}`;
  let completed;
  let waiting;
  let continued;

  // 1. Blocking send -> completed with an artifact.
  let name = 'message/send (blocking) tck-complete-task -> Task completed with an artifact';
  try {
    const r = await client.sendMessage(
      { message: textMessage({ messageId: `tck-complete-task-${suffix}`, text: `js03 complete ${suffix}` }) },
      opts(),
    );
    if (isTask(r)) completed = r;
    c.check(
      name,
      isTask(r) && r.id && r.contextId && r.status?.state === 'completed' && (r.artifacts ?? []).length >= 1,
      `${describe(r)} artifacts=${JSON.stringify((r.artifacts ?? []).flatMap((a) => texts(a.parts)))}`,
    );
  } catch (e) {
    c.error(name, e);
  }

  // 2. Non-blocking send -> a Task at once; it reaches input-required.
  name = 'message/send blocking=false tck-input-required -> a Task at once (not terminal)';
  try {
    const started = Date.now();
    const r = await client.sendMessage(
      {
        message: textMessage({ messageId: `tck-input-required-${suffix}`, text: inputText }),
        configuration: { blocking: false, acceptedOutputModes: ['text/plain'] },
      },
      opts(),
    );
    if (isTask(r)) waiting = r;
    c.check(name, isTask(r) && r.id && !TERMINAL.has(r.status?.state), `${describe(r)} in ${Date.now() - started} ms`);
  } catch (e) {
    c.error(name, e);
  }
  name = 'that task reaches input-required (tasks/get polling)';
  if (!waiting) {
    c.check(name, false, 'no task from the previous step');
  } else {
    try {
      let got = waiting;
      let polls = 0;
      const deadline = Date.now() + SETTLE_MS;
      while (got.status?.state !== 'input-required' && Date.now() < deadline) {
        await sleep(50);
        got = await client.getTask({ id: waiting.id }, opts());
        polls += 1;
      }
      c.check(name, got.status?.state === 'input-required', `${describe(got)} after ${polls} polls`);
    } catch (e) {
      c.error(name, e);
    }
  }

  // 3. A follow-up with that taskId continues the same task.
  name = 'message/send follow-up with taskId continues the input-required task -> completed';
  if (!waiting) {
    c.check(name, false, 'no task from the previous steps');
  } else {
    try {
      const r = await client.sendMessage(
        {
          message: textMessage({
            messageId: `tck-complete-task-${suffix}-2`,
            text: followText,
            taskId: waiting.id,
            contextId: waiting.contextId,
          }),
        },
        opts(),
      );
      if (isTask(r)) continued = r;
      c.check(name, isTask(r) && r.id === waiting.id && r.status?.state === 'completed', `${describe(r)} (wanted id ${waiting.id})`);
    } catch (e) {
      c.error(name, e);
    }
  }

  // 4. tasks/get: history, historyLength.
  if (!continued) {
    c.check('tasks/get history checks', false, 'no continued task from the previous step');
  } else {
    let full;
    name = 'tasks/get -> the history has both user messages, in order';
    try {
      full = await client.getTask({ id: continued.id }, opts());
      const all = userTexts(full);
      const i = all.indexOf(inputText);
      const j = all.indexOf(followText);
      c.check(name, full.id === continued.id && i >= 0 && j > i, `history=${(full.history ?? []).length} user texts=${JSON.stringify(all)}`);
    } catch (e) {
      c.error(name, e);
    }
    name = 'tasks/get historyLength=1 -> only the newest message';
    try {
      const got = await client.getTask({ id: continued.id, historyLength: 1 }, opts());
      const ids = (got.history ?? []).map((m) => m.messageId);
      const newest = full?.history?.at(-1)?.messageId;
      c.check(name, ids.length === 1 && newest && ids[0] === newest, `history=${JSON.stringify(ids)} newest=${newest}`);
    } catch (e) {
      c.error(name, e);
    }
  }

  // 5. Unknown task -> TaskNotFound.
  await expectError(c, seen, binding, 'tasks/get unknown id', TaskNotFoundError, { jsonrpc: -32001, http: 404, grpc: 'NOT_FOUND' }, () =>
    client.getTask({ id: `no-such-task-${randomUUID()}` }, opts()),
  );

  // 6. A waiting task for the push configs and the cancel.
  let toCancel;
  name = 'message/send (blocking) tck-input-required -> Task input-required';
  try {
    const r = await client.sendMessage(
      { message: textMessage({ messageId: `tck-input-required-${suffix}-c`, text: `js03 cancel ${suffix}` }) },
      opts(),
    );
    if (isTask(r)) toCancel = r;
    c.check(name, isTask(r) && r.status?.state === 'input-required', describe(r));
  } catch (e) {
    c.error(name, e);
  }

  const receiver = await startReceiver();
  try {
    const pushReady = toCancel ? await pushChecks(c, client, binding, seen, toCancel.id, receiver, suffix) : false;
    name = 'tasks/cancel of the input-required task -> canceled';
    if (!toCancel) {
      c.check(name, false, 'no task from the previous step');
    } else {
      try {
        const r = await client.cancelTask({ id: toCancel.id }, opts());
        c.check(name, r.id === toCancel.id && r.status?.state === 'canceled', describe(r));
      } catch (e) {
        c.error(name, e);
      }
      name = 'tasks/get after the cancel -> canceled';
      try {
        const r = await client.getTask({ id: toCancel.id }, opts());
        c.check(name, r.status?.state === 'canceled', describe(r));
      } catch (e) {
        c.error(name, e);
      }
      if (pushReady) await webhookChecks(c, receiver, toCancel.id, suffix);
    }
  } finally {
    receiver.close();
  }

  // 7. Cancel of a completed task -> TaskNotCancelable.
  await expectError(c, seen, binding, 'tasks/cancel of a completed task', TaskNotCancelableError, { jsonrpc: -32002, http: 409, grpc: 'FAILED_PRECONDITION' }, () =>
    completed ? client.cancelTask({ id: completed.id }, opts()) : Promise.reject(new Error('no completed task from step 1')),
  );
}

async function pushChecks(c, client, binding, seen, taskId, receiver, suffix) {
  const hookId = `js03-hook-${suffix}`;
  const otherId = `js03-other-${suffix}`;
  const token = `tok-${suffix}`;
  const hookUrl = `${receiver.url}/hooks/${hookId}`;
  const otherUrl = `${receiver.url}/hooks/${otherId}`;
  const shapeOf = (x) => [x?.taskId, x?.pushNotificationConfig?.id, x?.pushNotificationConfig?.url, x?.pushNotificationConfig?.token ?? null];
  let created = false;

  let name = 'tasks/pushNotificationConfig/set -> TaskPushNotificationConfig {taskId, pushNotificationConfig:{id,url,token}}';
  try {
    const got = await client.setTaskPushNotificationConfig(
      { taskId, pushNotificationConfig: { id: hookId, url: hookUrl, token } },
      opts(),
    );
    created = c.check(name, JSON.stringify(shapeOf(got)) === JSON.stringify([taskId, hookId, hookUrl, token]), `got=${JSON.stringify(got)}`);
  } catch (e) {
    c.error(name, e);
  }
  name = 'tasks/pushNotificationConfig/set of a second config (no token)';
  try {
    const got = await client.setTaskPushNotificationConfig({ taskId, pushNotificationConfig: { id: otherId, url: otherUrl } }, opts());
    c.check(name, JSON.stringify(shapeOf(got).slice(0, 3)) === JSON.stringify([taskId, otherId, otherUrl]) && !got.pushNotificationConfig.token, `got=${JSON.stringify(got)}`);
  } catch (e) {
    c.error(name, e);
  }
  name = 'tasks/pushNotificationConfig/get (id + pushNotificationConfigId) -> the config';
  try {
    const got = await client.getTaskPushNotificationConfig({ id: taskId, pushNotificationConfigId: hookId }, opts());
    c.check(name, JSON.stringify(shapeOf(got)) === JSON.stringify([taskId, hookId, hookUrl, token]), `got=${JSON.stringify(got)}`);
  } catch (e) {
    c.error(name, e);
  }
  const listIds = async () => {
    const got = await client.listTaskPushNotificationConfig({ id: taskId }, opts());
    if (!Array.isArray(got)) throw new Error(`not an array: ${JSON.stringify(got)}`);
    return got.map((x) => x.pushNotificationConfig?.id).sort();
  };
  name = 'tasks/pushNotificationConfig/list -> both configs (a bare array)';
  try {
    const ids = await listIds();
    c.check(name, JSON.stringify(ids) === JSON.stringify([hookId, otherId].sort()), `ids=${JSON.stringify(ids)}`);
  } catch (e) {
    c.error(name, e);
  }
  name = 'tasks/pushNotificationConfig/delete -> the list has the other config only';
  try {
    await client.deleteTaskPushNotificationConfig({ id: taskId, pushNotificationConfigId: otherId }, opts());
    const ids = await listIds();
    c.check(name, JSON.stringify(ids) === JSON.stringify([hookId]), `ids=${JSON.stringify(ids)}`);
  } catch (e) {
    c.error(name, e);
  }
  if (binding === 'jsonrpc') {
    const del = seen.findLast((r) => r.rpcMethod === 'tasks/pushNotificationConfig/delete');
    let reply;
    try {
      reply = JSON.parse(del?.responseText ?? 'null');
    } catch {
      reply = del?.responseText;
    }
    c.check(
      'tasks/pushNotificationConfig/delete success carries "result": null',
      reply && typeof reply === 'object' && 'result' in reply && reply.result === null && !('error' in reply),
      JSON.stringify(reply),
    );
  }
  return created;
}

async function webhookChecks(c, receiver, taskId, suffix) {
  const name =
    'webhook got a POST with the 0.3 Task (kind "task", status.state "canceled"), X-A2A-Notification-Token and Content-Type application/json';
  const deadline = Date.now() + SETTLE_MS;
  let hit;
  while (!hit && Date.now() < deadline) {
    hit = receiver.deliveries.find((d) => {
      try {
        const body = JSON.parse(d.body);
        return d.path === `/hooks/js03-hook-${suffix}` && body.kind === 'task' && body.id === taskId && body.status?.state === 'canceled';
      } catch {
        return false;
      }
    });
    if (!hit) await sleep(50);
  }
  c.check(
    name,
    hit && hit.headers['x-a2a-notification-token'] === `tok-${suffix}` && String(hit.headers['content-type']).startsWith('application/json'),
    hit
      ? `token=${hit.headers['x-a2a-notification-token']} content-type=${hit.headers['content-type']}`
      : `deliveries=${JSON.stringify(receiver.deliveries.map((d) => [d.path, d.body.slice(0, 160)]))}`,
  );
  const late = receiver.deliveries.filter((d) => d.path === `/hooks/js03-other-${suffix}` && d.body.includes('"canceled"'));
  c.check('the deleted config got no notification of the cancel', late.length === 0, `${late.length} deliveries`);
}

/**
 * `call` must fail with the SDK's `errorClass`, from the binding's wire code (the gRPC client
 * maps the status code itself: NOT_FOUND -> TaskNotFoundError, FAILED_PRECONDITION on
 * CancelTask -> TaskNotCancelableError).
 */
async function expectError(c, seen, binding, what, errorClass, codes, call) {
  const want = { jsonrpc: `JSON-RPC ${codes.jsonrpc}`, rest: `HTTP ${codes.http}`, grpc: `gRPC ${codes.grpc}` }[binding];
  const name = `${what} -> ${errorClass.name} (${want})`;
  const before = seen.length;
  try {
    const got = await call();
    c.check(name, false, `no error, got ${JSON.stringify(got)?.slice(0, 200)}`);
  } catch (e) {
    const err = e instanceof errorClass ? e : e?.cause instanceof errorClass ? e.cause : undefined;
    const last = seen.slice(before).at(-1);
    const code = err?.errorResponse?.error?.code;
    const ok =
      err !== undefined &&
      (binding === 'rest' ? last?.status === codes.http : binding === 'jsonrpc' ? code === codes.jsonrpc : true);
    const wire = binding === 'grpc' ? `gRPC ${e?.cause?.code ?? ''} ${e?.cause?.details ?? ''}` : `HTTP ${last?.status} ${last?.contentType} ${String(last?.responseText ?? '').slice(0, 160)}`;
    c.check(name, ok, `${describeError(e)}; ${wire}`);
  }
}

// ----------------------------------------------------------------------------------------------
// Streaming: message/stream, tasks/resubscribe.

async function streamChecks(c, client, binding, seen) {
  const rest = binding === 'rest';
  const suffix = randomUUID().replaceAll('-', '').slice(0, 12);
  let finished;

  // 1. A chunked artifact: Task first, updates, a final completed update, the end.
  let name =
    'message/stream tck-stream-artifact-chunked -> Task first, status/artifact updates, last a final completed status update, then the stream closes';
  try {
    const events = await collect(
      client.sendMessageStream({ message: textMessage({ messageId: `tck-stream-artifact-chunked-${suffix}`, text: 'chunks' }) }, opts()),
    );
    const kinds = shape(events);
    if (isTask(events[0])) finished = events[0].id;
    c.check(
      name,
      kinds[0] === 'task' &&
        kinds.includes('artifact-update') &&
        endsFinal(events, 'completed') &&
        events.slice(1).every((e) => e.taskId === finished && (e.kind === 'status-update' || e.kind === 'artifact-update')),
      `events=${JSON.stringify(kinds)}`,
    );
    // The 0.3.14 REST and gRPC clients drop `append` when they convert an artifact update
    // (FromProto.taskArtifactUpdateEvent), so there only the text and lastChunk are seen.
    const noAppend = binding !== 'jsonrpc';
    const chunks = events.filter((e) => e.kind === 'artifact-update');
    const got = chunks.map((a) => [texts(a.artifact.parts), ...(noAppend ? [] : [Boolean(a.append)]), Boolean(a.lastChunk)]);
    const want = noAppend
      ? [[['chunk-1 '], false], [['chunk-2'], true]]
      : [[['chunk-1 '], false, false], [['chunk-2'], true, true]];
    c.check(
      noAppend
        ? "the artifact chunks: 'chunk-1 ' (lastChunk false), 'chunk-2' (lastChunk true); this client drops append"
        : "the artifact chunks: 'chunk-1 ' (append false, lastChunk false), 'chunk-2' (append true, lastChunk true)",
      JSON.stringify(got) === JSON.stringify(want) && new Set(chunks.map((a) => a.artifact.artifactId)).size === 1,
      `chunks=${JSON.stringify(got)}`,
    );
  } catch (e) {
    c.error(name, e);
  }

  // 2. A task that waits for input: the stream ends with a final input-required update.
  name = 'message/stream tck-input-required -> Task first, last a final (final: true) input-required status update, then the stream closes';
  let waiting;
  try {
    const events = await collect(
      client.sendMessageStream({ message: textMessage({ messageId: `tck-input-required-${suffix}`, text: 'ask me' }) }, opts()),
    );
    if (isTask(events[0])) waiting = events[0].id;
    c.check(name, isTask(events[0]) && endsFinal(events, 'input-required'), `events=${JSON.stringify(shape(events))}`);
  } catch (e) {
    if (e.events && isTask(e.events[0])) waiting = e.events[0].id;
    c.error(name, e);
  }

  // 3. Resubscribe to the waiting task, then answer it: the answer's events, until final.
  name =
    "tasks/resubscribe on the input-required task -> (its Task,) then the answer's updates, last a final completed status update, then the stream closes";
  if (!waiting) {
    c.check(name, false, 'no waiting task from step 2');
  } else {
    const controller = new AbortController();
    const sub = collect(client.resubscribeTask({ id: waiting }, { signal: controller.signal })).then(
      (events) => ({ events }),
      (error) => ({ error }),
    );
    try {
      const early = await Promise.race([sub, sleep(1000).then(() => undefined)]);
      if (early) {
        throw early.error ?? new Error(`the resubscribe stream ended before the answer: ${JSON.stringify(shape(early.events))}`);
      }
      const answer = await collect(
        client.sendMessageStream(
          { message: textMessage({ messageId: `tck-stream-artifact-chunked-${suffix}-2`, text: 'finish', taskId: waiting }) },
          opts(),
        ),
      );
      const done = await sub;
      if (done.error) throw done.error;
      const events = done.events;
      const updates = isTask(events[0]) ? events.slice(1) : events;
      const firstOk = !isTask(events[0]) || (events[0].id === waiting && events[0].status?.state === 'input-required');
      c.check(
        name,
        firstOk &&
          shape(updates).includes('artifact-update') &&
          endsFinal(updates, 'completed') &&
          updates.every((e) => e.taskId === waiting) &&
          endsFinal(answer, 'completed'),
        `resubscribe=${JSON.stringify(shape(events))} answer=${JSON.stringify(shape(answer))}`,
      );
    } catch (e) {
      c.error(name, e);
    } finally {
      controller.abort();
    }
  }

  // 4. Refusals.
  name = `tasks/resubscribe unknown id -> TaskNotFoundError (${{ rest: 'HTTP 404', jsonrpc: 'JSON-RPC -32001, inside the SSE stream', grpc: 'gRPC NOT_FOUND' }[binding]})`;
  try {
    const before = seen.length;
    try {
      const events = await collect(client.resubscribeTask({ id: `no-such-task-${randomUUID()}` }, opts()));
      c.check(name, false, `no error, got ${JSON.stringify(shape(events))}`);
    } catch (e) {
      const err = e instanceof TaskNotFoundError ? e : e?.cause instanceof TaskNotFoundError ? e.cause : undefined;
      const last = seen.slice(before).at(-1);
      const ok =
        err !== undefined &&
        (rest ? last?.status === 404 : binding === 'jsonrpc' ? err.errorResponse?.error?.code === -32001 : true);
      c.check(name, ok, `${describeError(e)}; HTTP ${last?.status} ${last?.contentType}`);
    }
  } catch (e) {
    c.error(name, e);
  }
  name = 'tasks/resubscribe on a completed task -> an error, or its Task and the end';
  if (!finished) {
    c.check(name, false, 'no finished task from step 1');
  } else {
    try {
      const events = await collect(client.resubscribeTask({ id: finished }, opts()));
      c.check(name, events.length === 1 && isTask(events[0]) && TERMINAL.has(events[0].status?.state), `events=${JSON.stringify(shape(events))}`);
    } catch (e) {
      c.check(name, !/did not close/.test(e.message), describeError(e));
    }
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
  if (args.length !== 1 || !['auto', 'jsonrpc', 'http_json', 'grpc'].includes(mode)) {
    console.error('usage: node interop03.mjs <base-url> [--transport auto|jsonrpc|http_json|grpc]');
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
