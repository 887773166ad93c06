#!/usr/bin/env node
// The official JavaScript client (@a2a-js/sdk) against a taskledger server that signs its agent
// card and wants bearer tokens: the SDK's card-signature verifier accepts the public card and the
// extended card as served (keys from the JWKS the signature's `jku` names), rejects a changed card,
// and the client works with a bearer token (send, get, list, the extended card) and is refused
// without one.
//
// The verifier is given the card documents as JSON. Given the objects the SDK's own resolver and
// transports return, its canonicalization (`AgentCard.fromJSON` of an object already decoded)
// drops `securitySchemes`, so no card that declares a security scheme verifies on that path:
// an SDK issue, not one of the signature (the Python SDK verifies its decoded cards).
//
// Usage: node card_signature.mjs <base-url> <token>
// Prints one PASS/FAIL line per check and `N passed, M failed`; exits 1 if any check failed.

import { randomUUID, webcrypto } from 'node:crypto';

import * as jose from 'jose';

import { Role, TaskState, verifyAgentCardSignature } from '@a2a-js/sdk';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  createAuthenticatingFetchWithRetry,
} from '@a2a-js/sdk/client';

let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) {
    passed += 1;
    console.log(`PASS ${name}`);
  } else {
    failed += 1;
    console.log(`FAIL ${name}${detail ? `: ${detail}` : ''}`);
  }
}

async function rejects(promise) {
  try {
    await promise;
    return false;
  } catch {
    return true;
  }
}

const [base, token] = process.argv.slice(2);
if (!base || !token) {
  console.error('usage: node card_signature.mjs <base-url> <token>');
  process.exit(2);
}

// The verifier's key lookup: the JWKS at the signature's `jku`, the key with its `kid`.
const keysSeen = [];
const verify = verifyAgentCardSignature(async (kid, jku) => {
  keysSeen.push({ kid, jku });
  const jwks = await (await fetch(jku ?? `${base}/.well-known/jwks.json`)).json();
  const jwk = jwks.keys.find((k) => k.kid === kid);
  if (!jwk) throw new Error(`no key ${kid} in the JWKS`);
  return webcrypto.subtle.importKey('jwk', jwk, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify']);
});

const document = await (await fetch(`${base}/.well-known/agent-card.json`)).json();
const card = await new DefaultAgentCardResolver().resolve(base);
check('the card carries its signatures', (card.signatures ?? []).length >= 2, JSON.stringify(card.signatures));

// RFC 8785 written out (JSON.stringify writes strings and numbers as the RFC says; keys sorted
// by UTF-16 code units): the first two signatures cover the 1.0 card a 1.x fetch gets and the
// merged card a version-less fetch gets, exactly as served.
const jcs = (v) => v === null || typeof v !== 'object'
  ? JSON.stringify(v)
  : Array.isArray(v)
    ? `[${v.map(jcs).join(',')}]`
    : `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${jcs(v[k])}`).join(',')}}`;
for (const [i, version] of [[0, '1.0'], [1, undefined]]) {
  const doc = await (await fetch(`${base}/.well-known/agent-card.json`, {
    headers: version ? { 'A2A-Version': version } : {},
  })).json();
  const { signatures, ...unsigned } = doc;
  const sig = signatures[i];
  const header = JSON.parse(Buffer.from(sig.protected, 'base64url').toString());
  const jwks = await (await fetch(header.jku)).json();
  const key = await webcrypto.subtle.importKey('jwk', jwks.keys.find((k) => k.kid === header.kid),
    { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify']);
  const ok = !(await rejects(jose.flattenedVerify({
    payload: Buffer.from(jcs(unsigned)).toString('base64url'),
    protected: sig.protected,
    signature: sig.signature,
  }, key)));
  check(`signature ${i} verifies over the RFC 8785 form of the card for version ${version}`, ok);
}
check('the SDK verifies the public card', !(await rejects(verify(document))));
check(
  'the key comes from the JWKS the signature names',
  keysSeen.length > 0 && keysSeen[0].jku === `${base}/.well-known/jwks.json`,
  JSON.stringify(keysSeen),
);
check('a changed card does not verify', await rejects(verify({ ...document, description: 'tampered' })));
// Where they disagree: the SDK drops empty members (the bearer requirement's empty scope list)
// before canonicalizing, so it refuses the RFC 8785 signatures alone and accepts the card by the
// one over its own form.
check(
  'where they disagree the SDK refuses the RFC 8785 signatures alone',
  await rejects(verify({ ...document, signatures: document.signatures.slice(0, 2) })),
);

const authFetch = createAuthenticatingFetchWithRetry(fetch, {
  headers: async () => ({ Authorization: `Bearer ${token}` }),
  shouldRetryWithHeaders: async () => undefined,
});
const client = await new ClientFactory({
  transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })],
}).createFromAgentCard(card);
// Request objects in full, as the SDK's TypeScript types require.
const sent = await client.sendMessage({
  tenant: '',
  message: {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: 'hello' }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  },
  configuration: {
    acceptedOutputModes: ['text/plain'],
    taskPushNotificationConfig: undefined,
    historyLength: undefined,
    returnImmediately: false,
  },
  metadata: undefined,
});
const task = sent;
check('send with a bearer token', typeof task?.id === 'string' && task.id.length > 0, JSON.stringify(sent));
const got = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
check('get with a bearer token', got?.id === task.id);
const listed = await client.listTasks({
  tenant: '',
  contextId: '',
  status: TaskState.TASK_STATE_UNSPECIFIED,
  pageSize: undefined,
  pageToken: '',
  historyLength: undefined,
  statusTimestampAfter: undefined,
  includeArtifacts: undefined,
});
check('list with a bearer token', (listed?.tasks ?? []).some((t) => t.id === task.id), JSON.stringify(listed?.totalSize));
const extended = await client.getAgentCard();
check(
  'the client fetches the extended card with the token',
  (extended.skills ?? []).some((s) => s.id === 'shared-tasks'),
  JSON.stringify(extended.skills?.map((s) => s.id)),
);
const rpc = await (
  await authFetch(`${base}/a2a`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard', params: {} }),
  })
).json();
check('the SDK verifies the extended card', !(await rejects(verify(rpc.result))), JSON.stringify(rpc.error));

const anonymous = await new ClientFactory({
  transports: [new JsonRpcTransportFactory({ fetchImpl: fetch })],
}).createFromAgentCard(card);
check(
  'without a token the call is refused',
  await rejects(anonymous.getTask({ tenant: '', id: task.id, historyLength: undefined })),
);

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
