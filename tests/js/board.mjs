#!/usr/bin/env node
// The task board in a real browser (Debian's Chromium, driven by playwright-core): three people
// sign in with their own tokens; alice's new task, shared with bob (asked) and carol (watching),
// appears on her open board without a reload; bob answers the help request from the task page
// (carol is offered no answer); alice approves a handoff and cancels a task from their pages.
// Screenshots of the board and a task page go to <screenshot-dir> (not committed).
//
// With a second server running the model agent against the mock Chat Completions endpoint of
// mock_model.mjs (`--llm-base-url http://127.0.0.1:<mock-port>/v1`), it also watches a plan step
// turn done on an open page as the agent works, and rejects the tool call the agent then asks
// approval for.
//
// Usage: node board.mjs <base-url> <screenshot-dir> [<agent-server-url>]
// Tokens: tok-alice, tok-bob, tok-carol. Prints PASS/FAIL per check; exits 1 if any failed.

import { mkdirSync } from 'node:fs';
import { randomUUID } from 'node:crypto';

import { chromium } from 'playwright-core';

const [base, shots, agentBase] = process.argv.slice(2);
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
const HITL_URI = 'https://kagent.dev/extensions/hitl/v1';

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
  check('only an admin is offered role changes', (await bob.locator('form[data-rpc=set-role]').count()) === 0);
  // With the keyboard only: Tab to the answer, Enter.
  let reached = false;
  for (let i = 0; i < 60 && !reached; i += 1) {
    await bob.keyboard.press('Tab');
    reached = await bob.evaluate(() => document.activeElement?.matches('form[data-rpc=answer-help] button[value=a]'));
  }
  check('the answer is reachable with the Tab key', reached);
  await bob.keyboard.press('Enter');
  await bob.waitForFunction(() => document.querySelector('#task')?.dataset.state === 'TASK_STATE_COMPLETED', null, { timeout: 10_000 }).then(
    () => check('bob answers the help request and the task completes', true),
    async () => check('bob answers the help request and the task completes', false, await stateOf(bob)),
  );
  await carol.waitForFunction(() => document.querySelector('#task')?.dataset.state === 'TASK_STATE_COMPLETED', null, { timeout: 10_000 }).then(
    () => check("carol's open page follows without a reload", true),
    async () => check("carol's open page follows without a reload", false, await stateOf(carol)),
  );

  // The timeline slider: alice moves it to the first event and the page shows the task as it
  // was then, read-only; "Now" brings the live page back.
  await alice.goto(`${base}/board/tasks/${id}`);
  const slider = alice.locator('input[data-as-of-slider]');
  check('a task page has a timeline slider', (await slider.count()) === 1);
  await Promise.all([
    alice.waitForURL(/[?&]at=1$/, { timeout: 10_000 }),
    slider.evaluate((el) => { el.value = el.min; el.dispatchEvent(new Event('change', { bubbles: true })); }),
  ]).catch(() => {});
  await alice.waitForSelector('#task[data-as-of="1"]', { timeout: 10_000 }).then(
    () => check('moving the slider redraws the page as of that event', true),
    (e) => check('moving the slider redraws the page as of that event', false, e.message),
  );
  check('the past state is the task as created', (await stateOf(alice)) === 'TASK_STATE_SUBMITTED', await stateOf(alice));
  check('a past state offers no action', (await alice.locator('#task form[data-rpc]').count()) === 0);
  await alice.screenshot({ path: `${shots}/as-of.png`, fullPage: true });
  await Promise.all([alice.waitForURL((u) => !u.search.includes('at=')), alice.click('form.as-of a.now')]);
  check('"Now" shows the task as it is', (await stateOf(alice)) === 'TASK_STATE_COMPLETED', await stateOf(alice));

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

  // Cancelling from the page, after alice (an admin) makes carol a reporter there.
  const other = await sharedTask();
  await alice.goto(`${base}/board/tasks/${other}`);
  await alice.selectOption('form[data-rpc=set-role][data-participant=carol] select', 'reporter');
  await alice.click('form[data-rpc=set-role][data-participant=carol] button');
  await carol.goto(`${base}/board/tasks/${other}`);
  await carol.waitForSelector('form[data-rpc=send]', { timeout: 10_000 }).then(
    () => check('an admin changes a role from the page, and the new reporter may send', true),
    (e) => check('an admin changes a role from the page, and the new reporter may send', false, e.message),
  );
  await alice.click('form[data-rpc=cancel] button');
  await alice.waitForFunction(() => document.querySelector('#task')?.dataset.state === 'TASK_STATE_CANCELED', null, { timeout: 10_000 }).then(
    () => check('the owner cancels a task from its page', true),
    async () => check('the owner cancels a task from its page', false, await stateOf(alice)),
  );
  const bobLate = await signIn(browser, 'tok-bob');
  await bobLate.goto(`${base}/board/tasks/${other}`);
  check('a canceled task offers nothing more to do', (await bobLate.locator('section.actions form').count()) === 0);
  // An A2UI surface the agent shows is drawn as components; its button acts through the API.
  const ui = await rpc('tok-alice', 'SendMessage', {
    message: { messageId: `th-ui-${randomUUID()}`, role: 'ROLE_USER', parts: [{ text: 'Pick one' }, { data: { name: 'UI', goal: 'show a surface' }, mediaType: TASK_MEDIA }] },
    configuration: { returnImmediately: false },
  });
  await alice.goto(`${base}/board/tasks/${ui.task.id}`);
  check('the A2UI surface is drawn as components', (await alice.locator('.a2ui-surface .a2ui-column p.a2ui-text').count()) >= 1);
  const said = await alice.textContent('.a2ui-surface p.a2ui-text[data-bound="/said"]').catch(() => '');
  check("a Text bound to the surface's data model shows the model's value", said === 'Pick one', said);
  await alice.fill('.a2ui-surface input[data-path="/form/name"]', 'Ada');
  await alice.screenshot({ path: `${shots}/a2ui.png`, fullPage: true });
  await alice.click('form[data-rpc=a2ui-action] button');
  await alice.waitForFunction(() => document.querySelector('ol.history')?.textContent.includes('[A2UI action] ok'), null, { timeout: 10_000 }).then(
    () => check("clicking the surface's button sends its action to the agent", true),
    async () => check("clicking the surface's button sends its action to the agent", false, (await alice.textContent('ol.history')).slice(-300)),
  );
  const history = await alice.textContent('ol.history');
  check('the action carries what was typed into the bound field as its context', history.includes('with {"name":"Ada"}'), history.slice(-200));

  if (agentBase) await agentScenario(browser);
} finally {
  await browser.close();
}

// Alice's message to the model agent's server (hitl/v1 active), answered at once: the task's id.
async function sendToAgent(parts) {
  const r = await fetch(`${agentBase}/a2a`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: 'Bearer tok-alice',
      'A2A-Extensions': HITL_URI,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method: 'SendMessage', params: {
      message: { messageId: randomUUID(), role: 'ROLE_USER', extensions: [HITL_URI], parts },
      configuration: { returnImmediately: true },
    } }),
  });
  return (await r.json()).result.task.id;
}

async function agentScenario(browser) {
  const id = await sendToAgent([{ text: 'Release it' }, { mediaType: TASK_MEDIA, data: {
    name: 'Agent release', goal: 'Build and ship', approve_tools: ['spawn_subtask'],
    participants: [{ id: 'alice', kind: 'human', role: 'admin' }],
    plan: { steps: [{ id: '', name: 'Build' }, { id: '', name: 'Ship', depends_on: ['Build'] }] },
  } }]);
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${agentBase}/board/login`);
  await page.fill('#token', 'tok-alice');
  await Promise.all([page.waitForURL(`${agentBase}/`), page.click('button[type=submit]')]);
  await page.goto(`${agentBase}/board/tasks/${id}`);
  const build = 'svg.plan g.step[data-step-state]';
  const first = await page.locator(build).first().getAttribute('data-step-state');
  check('the plan step is pending when the page opens', first === 'pending', first);
  await page.waitForFunction(() => document.querySelector('svg.plan g.step')?.dataset.stepState === 'done', null, { timeout: 15_000 }).then(
    () => check('the step turns done on the open page as the agent works', true),
    (e) => check('the step turns done on the open page as the agent works', false, e.message),
  );
  await page.waitForSelector('form[data-rpc=approve-tools]', { timeout: 15_000 }).then(
    () => check('the tool call waits for approval on the page', true),
    (e) => check('the tool call waits for approval on the page', false, e.message),
  );
  await page.screenshot({ path: `${shots}/tool-approval.png`, fullPage: true });
  check('no message box while the decision is pending', (await page.locator('form[data-rpc=send]').count()) === 0);
  await page.check('form[data-rpc=approve-tools] input[value=reject]');
  await page.click('form[data-rpc=approve-tools] button[type=submit]');
  await page.waitForFunction(() => document.querySelector('#task')?.dataset.state === 'TASK_STATE_COMPLETED', null, { timeout: 15_000 }).then(
    () => check('rejecting the tool call lets the agent finish without it', true),
    async () => check('rejecting the tool call lets the agent finish without it', false, await page.getAttribute('#task', 'data-state')),
  );
  const history = await page.textContent('ol.history');
  check('the agent was told the call was rejected', /reject/i.test(history), history.slice(-300));
  await mcpScenario(page);
}
// An MCP tool (server-everything's echo, `--approve-tools everything__echo`) waits for a person:
// alice approves it on the task's page, the tool runs on the MCP server, the agent reads its
// result and finishes.
async function mcpScenario(page) {
  const id = await sendToAgent([{ text: 'echo it' }]);
  await page.goto(`${agentBase}/board/tasks/${id}`);
  await page.waitForSelector('form[data-rpc=approve-tools]', { timeout: 15_000 }).then(
    () => check('the MCP tool call waits for approval on the page', true),
    (e) => check('the MCP tool call waits for approval on the page', false, e.message),
  );
  const form = await page.textContent('form[data-rpc=approve-tools]');
  check('the approval names the MCP tool', form.includes('everything__echo'), form);
  await page.screenshot({ path: `${shots}/mcp-approval.png`, fullPage: true });
  await page.check('form[data-rpc=approve-tools] input[value=approve]');
  await page.click('form[data-rpc=approve-tools] button[type=submit]');
  await page.waitForFunction(() => document.querySelector('#task')?.dataset.state === 'TASK_STATE_COMPLETED', null, { timeout: 15_000 }).then(
    () => check('approving the MCP call lets the agent finish with its result', true),
    async () => check('approving the MCP call lets the agent finish with its result', false, await page.getAttribute('#task', 'data-state')),
  );
  const history = await page.textContent('ol.history');
  check('the MCP server\'s answer reached the agent', history.includes('hello from the board'), history.slice(-300));
  // The work view lists the call: the tool, its MCP server, how it ended.
  await page.reload();
  const row = page.locator('table.tool-calls tr[data-call="everything__echo"]');
  const outcome = (await row.count()) === 1 ? await row.getAttribute('data-outcome') : null;
  const server = (await row.count()) === 1 ? await row.locator('td').nth(3).textContent() : '';
  check('the work view lists the MCP call, its server and its outcome', outcome === 'ok' && server === 'everything', `${outcome} ${server}`);
  await page.screenshot({ path: `${shots}/mcp-work-view.png`, fullPage: true });
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
