#!/usr/bin/env node
// The board's security in a real browser (Debian's Chromium, playwright-core), issue 43 / ADR 020:
//   - a file part whose URL is `javascript:` is not drawn as a link (stored XSS);
//   - the page's Content-Security-Policy refuses inline script, so an injected <script> does
//     not run;
//   - a form on another site can neither sign a visitor in as someone else nor sign them out;
//   - a page on another site cannot drive a server that takes no credentials (no-cors POST);
//   - issue 51: the owner's task page shows no participant's webhook (id, URL, failure), each
//     viewer sees its own; a session cookie planted beside the real one (a narrower path, as a
//     page on another port of the host could) opens nothing.
// The "other site" is a page this script serves from a port of its own (another origin).
//
// Usage: node security.mjs <board-url> <credential-less-url>
// The board server has tokens tok-alice=acme/alice,tok-bob=acme/bob,tok-mallory=acme/mallory.
// Prints PASS/FAIL per check; exits 1 if any failed.

import http from 'node:http';
import { randomUUID } from 'node:crypto';

import { chromium } from 'playwright-core';

const [base, open] = process.argv.slice(2);
if (!base || !open) {
  console.error('usage: node security.mjs <board-url> <credential-less-url>');
  process.exit(2);
}

let failed = 0;
function check(name, ok, detail = '') {
  if (ok) {
    console.log(`PASS ${name}`);
  } else {
    failed += 1;
    console.log(`FAIL ${name}${detail ? `: ${detail}` : ''}`);
  }
}

async function rpc(url, token, method, params) {
  const headers = { 'Content-Type': 'application/json', 'A2A-Version': '1.0' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const r = await fetch(`${url}/a2a`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const body = await r.json();
  if (body.error) throw new Error(JSON.stringify(body.error));
  return body.result;
}

// The other site: pages with forms posting to the board, and a script calling the open server.
const evilPages = {
  '/login': `<form id="f" method="post" action="${base}/board/login"><input name="token" value="tok-mallory"></form>
             <script>document.getElementById('f').submit()</script>`,
  '/logout': `<form id="f" method="post" action="${base}/board/logout"></form>
              <script>document.getElementById('f').submit()</script>`,
  '/drive': `<script>
      const send = { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message:
        { messageId: 'evil-1', role: 'ROLE_USER', parts: [{ text: 'created by another site' }] } } };
      Promise.allSettled([
        fetch('${open}/a2a?A2A-Version=1.0', { method: 'POST', mode: 'no-cors', body: new Blob([JSON.stringify(send)]) }),
        fetch('${open}/a2a/rest/message:send?A2A-Version=1.0', { method: 'POST', mode: 'no-cors', body: new Blob([JSON.stringify(send.params)]) }),
        fetch('${open}/a2a', { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body: JSON.stringify(send) }),
      ]).then(() => { document.title = 'sent'; });
    </script>`,
};
const evil = http.createServer((req, res) => {
  const page = evilPages[req.url];
  res.writeHead(page ? 200 : 404, { 'Content-Type': 'text/html' });
  res.end(page ? `<!doctype html><title>other site</title>${page}` : 'not found');
});
await new Promise((resolve) => evil.listen(0, '127.0.0.1', resolve));
// Another origin than the servers': another port (and `localhost`, another host name).
const evilBase = `http://localhost:${evil.address().port}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});

async function signIn(token) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${base}/board/login`);
  await page.fill('#token', token);
  await Promise.all([page.waitForURL(`${base}/`), page.click('button[type=submit]')]);
  return { context, page };
}

const signedInAs = async (page) => {
  await page.goto(`${base}/`);
  return (await page.textContent('header.top').catch(() => '')) || '';
};

try {
  // Another site's page cannot drive the server that takes no credentials.
  const before = (await rpc(open, null, 'ListTasks', { pageSize: 1 })).totalSize;
  const driver = await (await browser.newContext()).newPage();
  await driver.goto(`${evilBase}/drive`);
  await driver.waitForFunction(() => document.title === 'sent', null, { timeout: 10_000 }).catch(() => {});
  await driver.waitForTimeout(300);
  const after = (await rpc(open, null, 'ListTasks', { pageSize: 1 })).totalSize;
  check('a page on another site creates no task on a server without credentials', after === before, `${before} -> ${after}`);

  // A task alice shares with bob, and bob's message carrying the finding's payload.
  const created = await rpc(base, 'tok-alice', 'SendMessage', {
    message: {
      messageId: `tck-input-required-${randomUUID()}`, role: 'ROLE_USER',
      parts: [{ text: 'shared' }, { mediaType: 'application/vnd.tiny-harness.task+json', data: { name: 'Sec', goal: 'g',
        participants: [{ id: 'alice', kind: 'human', role: 'admin' }, { id: 'bob', kind: 'human', role: 'assignee' }] } }],
    },
    configuration: { returnImmediately: false },
  });
  const id = created.task.id;
  await rpc(base, 'tok-bob', 'SendMessage', {
    message: {
      messageId: `m-${randomUUID()}`, role: 'ROLE_USER', taskId: id,
      parts: [
        { url: "javascript:void(window.__pwned=sessionStorage.getItem('tl_token'))", filename: 'report.pdf' },
        { text: '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>' },
      ],
    },
    configuration: { returnImmediately: true },
  });

  const { context, page } = await signIn('tok-alice');
  const violations = [];
  page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text()); });
  await page.goto(`${base}/board/tasks/${id}`);
  await page.waitForSelector('#task');
  const hrefs = await page.$$eval('a', (as) => as.map((a) => a.getAttribute('href') || ''));
  check('the javascript: part is shown', (await page.textContent('#task')).includes('report.pdf'));
  check('no link on the page has a javascript: URL', !hrefs.some((h) => h.trim().toLowerCase().startsWith('javascript:')), hrefs.join(' '));
  // Clicking what is shown of the part does nothing either.
  await page.click('text=report.pdf').catch(() => {});
  await page.waitForTimeout(300);
  if (!page.url().startsWith(`${base}/board/tasks/`)) await page.goto(`${base}/board/tasks/${id}`);
  check('nothing ran from the message', (await page.evaluate(() => window.__pwned)) === undefined);

  // An inline script, as an injection would add it, is refused by the policy.
  const injected = await page.addScriptTag({ content: 'window.__inline = true;' }).then(() => true, () => false);
  const ran = await page.evaluate(() => window.__inline === true);
  check('the Content-Security-Policy blocks inline script', !ran, `addScriptTag ${injected ? 'resolved' : 'refused'}`);
  check('the browser reported the blocked script', violations.length > 0, `${violations.length} reports`);
  // The page's own script still works (served from 'self'): the page keeps itself current.
  check("the board's own script runs (served from 'self')", await page.evaluate(() => typeof window.rpc === 'function'));

  // Login CSRF: another site's form signing alice's browser in as mallory.
  const other = await context.newPage();
  await other.goto(`${evilBase}/login`);
  await other.waitForLoadState('load');
  await other.waitForTimeout(500);
  const afterLogin = await signedInAs(page);
  check("another site's form does not sign the visitor in as someone else", afterLogin.includes('acme/alice') && !afterLogin.includes('mallory'), afterLogin);

  // Logout CSRF: another site's form signing her out.
  await other.goto(`${evilBase}/logout`);
  await other.waitForLoadState('load');
  await other.waitForTimeout(500);
  const afterLogout = await signedInAs(page);
  check("another site's form does not sign the visitor out", afterLogout.includes('acme/alice'), afterLogout);

  // Issue 51, B: bob's webhook (a secret in its query string, nothing listening) fails; alice's
  // page shows nothing of it, bob's shows his own.
  const bobsHook = `http://127.0.0.1:9/hook?secret=bob-${randomUUID()}`;
  const waiting = await rpc(base, 'tok-alice', 'SendMessage', {
    message: {
      messageId: `tck-input-required-${randomUUID()}`, role: 'ROLE_USER',
      parts: [{ text: 'hooks' }, { mediaType: 'application/vnd.tiny-harness.task+json', data: { name: 'Hooks', goal: 'g',
        participants: [{ id: 'alice', kind: 'human', role: 'admin' }, { id: 'bob', kind: 'human', role: 'assignee' }] } }],
    },
    configuration: { returnImmediately: false },
  });
  const hooked = waiting.task.id;
  await rpc(base, 'tok-bob', 'CreateTaskPushNotificationConfig', { taskId: hooked, id: 'bobs-hook', url: bobsHook });
  await rpc(base, 'tok-alice', 'SendMessage', {
    message: { messageId: `tck-input-required-${randomUUID()}`, role: 'ROLE_USER', taskId: hooked, parts: [{ text: 'an update' }] },
    configuration: { returnImmediately: true },
  });
  await page.waitForTimeout(1000);
  await page.goto(`${base}/board/tasks/${hooked}`);
  const alicesView = await page.content();
  check("the owner's page shows no participant's webhook", !alicesView.includes('bobs-hook') && !alicesView.includes(bobsHook) && !alicesView.includes('secret=bob-'));
  const bobs = await signIn('tok-bob');
  await bobs.page.goto(`${base}/board/tasks/${hooked}`);
  check("bob's page shows his own webhook", (await bobs.page.content()).includes('bobs-hook'));
  await bobs.context.close();

  // Issue 51, C: mallory's session planted beside alice's (a narrower path) opens nothing.
  const mallory = await signIn('tok-mallory');
  const hers = (await mallory.context.cookies(base)).find((c) => c.name === 'tl_session');
  await mallory.context.close();
  await context.addCookies([{ name: 'tl_session', value: hers.value, domain: new URL(base).hostname, path: '/board/tasks' }]);
  const planted = await context.newPage();
  await planted.goto(`${base}/board/tasks/${id}`);
  check('two session cookies open nothing', planted.url().startsWith(`${base}/board/login`), planted.url());
  await planted.close();
  await context.clearCookies({ path: '/board/tasks' }).catch(async () => {
    const kept = (await context.cookies(base)).filter((c) => c.path !== '/board/tasks');
    await context.clearCookies();
    await context.addCookies(kept);
  });

  // Her own sign-out works, and the cookie it had opens nothing afterwards.
  const cookies = await context.cookies(base);
  const session = cookies.find((c) => c.name === 'tl_session');
  check('the board cookie is a session, not the token', Boolean(session) && session.value !== 'tok-alice' && session.httpOnly);
  await page.goto(`${base}/`);
  await Promise.all([page.waitForURL(`${base}/board/login`), page.click('[data-action=logout]')]);
  const copy = await browser.newContext();
  await copy.addCookies([{ name: 'tl_session', value: session.value, url: base }]);
  const replay = await copy.newPage();
  await replay.goto(`${base}/`);
  check('a copy of a signed-out session opens nothing', replay.url().startsWith(`${base}/board/login`), replay.url());
  await copy.close();

} catch (e) {
  failed += 1;
  console.log(`FAIL the run: ${e.stack || e}`);
} finally {
  await browser.close();
  evil.close();
}
console.log(failed ? `${failed} failed` : 'all passed');
process.exit(failed ? 1 : 0);
