#!/usr/bin/env node
// Benchmark (prints numbers, asserts nothing): the board's first paint with many tasks, in
// Debian's headless Chromium. Seeds <n> tasks for the principal of token tok-alice through the
// public API (skipped when they are there), then opens the board in <browsers> cold browsers —
// the first tab of each, and three more tabs of the same browser — and prints the navigation's
// responseEnd and the first-contentful-paint entry of every load.
//
// Usage: node board_paint.mjs <base-url> [n=1000] [browsers=5]
// (the server started with --tokens tok-alice=<tenant>/alice; a release build for real figures)

import { chromium } from 'playwright-core';

const [base, n = '1000', browsers = '5'] = process.argv.slice(2);
const token = 'tok-alice';

async function rpc(method, params) {
  const r = await fetch(`${base}/a2a`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = await r.json();
  if (body.error) throw new Error(JSON.stringify(body.error));
  return body.result;
}

const have = (await rpc('ListTasks', { pageSize: 1 })).totalSize ?? 0;
let next = have;
async function seeder() {
  while (next < Number(n)) {
    const k = next++;
    await rpc('SendMessage', {
      message: {
        messageId: `paint-${k}`,
        role: 'ROLE_USER',
        parts: [{ text: `task ${k}` }, { data: { name: `Task ${k}`, goal: 'Seeded for the paint bench' }, mediaType: 'application/vnd.tiny-harness.task+json' }],
      },
      configuration: { returnImmediately: true },
    });
  }
}
await Promise.all(Array.from({ length: 16 }, seeder));

// The first-contentful-paint entry, waited for (headless Chromium reports it after `load`).
const paint = () => new Promise((ok) => {
  new PerformanceObserver((l) => {
    for (const e of l.getEntries()) if (e.name === 'first-contentful-paint') ok(e.startTime);
  }).observe({ type: 'paint', buffered: true });
  setTimeout(() => ok(-1), 3000);
});

async function load(ctx) {
  const page = await ctx.newPage();
  await page.goto(`${base}/`, { waitUntil: 'load' });
  const end = await page.evaluate(() => performance.getEntriesByType('navigation')[0].responseEnd);
  const fcp = await page.evaluate(paint);
  await page.close();
  return [Math.round(end), Math.round(fcp)];
}

const first = [];
const later = [];
for (let i = 0; i < Number(browsers); i++) {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const ctx = await browser.newContext();
  // Signed in through the form, as a person is: the cookie holds a session, not the token.
  const login = await ctx.newPage();
  await login.goto(`${base}/board/login`);
  await login.fill('#token', token);
  await Promise.all([login.waitForNavigation(), login.click('button[type=submit]')]);
  await login.close();
  first.push(await load(ctx));
  for (let j = 0; j < 3; j++) later.push(await load(ctx));
  await browser.close();
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (runs) => runs.map(([e, f]) => `${e}/${f}`).join(' ');
console.log(`tasks ${Math.max(have, Number(n))}; responseEnd/FCP ms per load`);
console.log(`first tab of a cold browser: ${fmt(first)}  (median FCP ${median(first.map((r) => r[1]))} ms)`);
console.log(`later tabs:                  ${fmt(later)}  (median FCP ${median(later.map((r) => r[1]))} ms)`);
