#!/usr/bin/env node
// The task board in a real browser (Debian's Chromium, driven by playwright-core): three people
// sign in with their own tokens; alice's new task, shared with bob (asked) and carol (watching),
// appears on her open board without a reload; bob answers the help request from the task page
// (carol is offered no answer); alice approves a handoff and cancels a task from their pages.
// Screenshots of the board and a task page go to <screenshot-dir> (not committed).
//
// Usage: node board.mjs <base-url> <screenshot-dir>
// Tokens: tok-alice, tok-bob, tok-carol. Prints PASS/FAIL per check; exits 1 if any failed.

import { mkdirSync } from 'node:fs';
import { randomUUID } from 'node:crypto';

import { chromium } from 'playwright-core';

const [base, shots] = process.argv.slice(2);
if (!base || !shots) {
  console.error('usage: node board.mjs <base-url> <screenshot-dir>');
  process.exit(2);
}
mkdirSync(shots, { recursive: true });

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

const WORK_URI = 'https://dispatch.foo/a2a/ext/work/v1';
const ENVELOPE_URI = 'https://dispatch.foo/a2a/ext/envelope/v1';
const TASK_MEDIA = 'application/vnd.tiny-harness.task+json';

async function rpc(token, method, params, extensions) {
  const headers = { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` };
  if (extensions) headers['A2A-Extensions'] = extensions.join(', ');
  const r = await fetch(`${base}/a2a`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const body = await r.json();
  if (body.error) throw new Error(JSON.stringify(body.error));
  return body.result;
}

const team = {
  name: 'Release 1.0',
  goal: 'Ship it',
  participants: [
    { id: 'alice', kind: 'human', role: 'admin' },
    { id: 'bob', kind: 'human', role: 'assignee' },
    { id: 'carol', kind: 'human', role: 'watcher' },
  ],
  plan: { steps: [{ id: '', name: 'Build' }, { id: '', name: 'Ship', depends_on: ['Build'] }] },
};

async function sharedTask() {
  const r = await rpc('tok-alice', 'SendMessage', {
    message: {
      messageId: `th-ask-bob:${randomUUID()}`,
      role: 'ROLE_USER',
      parts: [{ text: 'Deploy it' }, { data: team, mediaType: TASK_MEDIA }],
    },
    configuration: { returnImmediately: false },
  });
  return r.task.id;
}

async function signIn(browser, token) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${base}/`);
  await page.fill('#token', token);
  await Promise.all([page.waitForURL(`${base}/`), page.click('button[type=submit]')]);
  return page;
}

const stateOf = (page) => page.getAttribute('#task', 'data-state');

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  const alice = await signIn(browser, 'tok-alice');
  check('alice signs in and sees her board', (await alice.textContent('header.top')).includes('acme/alice'));

  // A task created meanwhile appears on her open board, without a reload.
  const id = await sharedTask();
  await alice.waitForSelector(`tr[data-task-id="${id}"]`, { timeout: 10_000 }).then(
    () => check('a new task appears on the open board', true),
    (e) => check('a new task appears on the open board', false, e.message),
  );
  check('the "no tasks" note is gone with it', await alice.isHidden('p.empty'));
  await alice.screenshot({ path: `${shots}/board.png`, fullPage: true });

  // Bob opens it from his board: the help request is his to answer; carol only watches.
  const bob = await signIn(browser, 'tok-bob');
  await bob.click(`tr[data-task-id="${id}"] a`);
  await bob.waitForSelector('#task');
  check('the plan is drawn with its steps', (await bob.locator('svg.plan g.step').count()) === 2);
  const carol = await signIn(browser, 'tok-carol');
  await carol.goto(`${base}/board/tasks/${id}`);
  check('the watcher is offered no answer', (await carol.locator('form[data-rpc=answer-help]').count()) === 0);
  check('the watcher is offered no message box', (await carol.locator('form[data-rpc=send]').count()) === 0);
  await bob.screenshot({ path: `${shots}/task.png`, fullPage: true });
  await bob.click('form[data-rpc=answer-help] button[value=a]');
  await bob.waitForFunction(() => document.querySelector('#task')?.dataset.state === 'TASK_STATE_COMPLETED', null, { timeout: 10_000 }).then(
    () => check('bob answers the help request and the task completes', true),
    async () => check('bob answers the help request and the task completes', false, await stateOf(bob)),
  );
  await carol.waitForFunction(() => document.querySelector('#task')?.dataset.state === 'TASK_STATE_COMPLETED', null, { timeout: 10_000 }).then(
    () => check("carol's open page follows without a reload", true),
    async () => check("carol's open page follows without a reload", false, await stateOf(carol)),
  );

  // A handoff waits for its owner: alice approves it on its page.
  const handoff = await rpc('tok-alice', 'SendMessage', {
    message: {
      messageId: `h-${randomUUID()}`,
      role: 'ROLE_USER',
      parts: [{ text: 'please take this over' }],
      metadata: { [WORK_URI]: { skill: 'handoff', title: 'Export the API as CSV', acceptance: ['CSV'], writes: ['src/**'], priority: 'urgent', labels: [] } },
    },
  }, [WORK_URI, ENVELOPE_URI]);
  const hid = handoff.task.id;
  await alice.goto(`${base}/board/tasks/${hid}`);
  const approve = alice.locator('form[data-rpc=answer-gate] button[value=approve]');
  check('the owner is offered the handoff decision', (await approve.count()) === 1);
  const before = await stateOf(alice);
  await approve.click();
  await alice.waitForFunction((s) => document.querySelector('#task')?.dataset.state !== s, before, { timeout: 10_000 }).then(
    () => check('approving the handoff moves the task on', true),
    async () => check('approving the handoff moves the task on', false, await stateOf(alice)),
  );

  // Cancelling from the page.
  const other = await sharedTask();
  await alice.goto(`${base}/board/tasks/${other}`);
  await alice.click('form[data-rpc=cancel] button');
  await alice.waitForFunction(() => document.querySelector('#task')?.dataset.state === 'TASK_STATE_CANCELED', null, { timeout: 10_000 }).then(
    () => check('the owner cancels a task from its page', true),
    async () => check('the owner cancels a task from its page', false, await stateOf(alice)),
  );
  const bobLate = await signIn(browser, 'tok-bob');
  await bobLate.goto(`${base}/board/tasks/${other}`);
  check('a canceled task offers nothing more to do', (await bobLate.locator('section.actions form').count()) === 0);
} finally {
  await browser.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
