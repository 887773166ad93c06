// The task board's script (ADR 023): keeps pages current and sends the actions a page offers
// through the public JSON-RPC API, with the token entered at sign-in (kept for this tab's
// session). Without it the pages still read; they just do not move or act.
'use strict';

const ENVELOPE_URI = 'https://dispatch.foo/a2a/ext/envelope/v1';
const HITL_URI = 'https://kagent.dev/extensions/hitl/v1';
const TASK_MEDIA = 'application/vnd.tiny-harness.task+json';
const A2UI_URI = 'https://a2ui.org/a2a-extension/a2ui/v0.9.1';
const REFRESH_MS = 1500;

function token() {
  return sessionStorage.getItem('tl_token') || '';
}

async function rpc(method, params, extensions) {
  const headers = { 'Content-Type': 'application/json', 'A2A-Version': '1.0' };
  if (token()) headers.Authorization = `Bearer ${token()}`;
  if (extensions) headers['A2A-Extensions'] = extensions.join(', ');
  const r = await fetch('/a2a', {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: Date.now(), method, params }),
  });
  const body = await r.json();
  if (body.error) throw new Error(body.error.message);
  return body.result;
}

function message(taskId, text, metadata, extensions) {
  const m = { messageId: crypto.randomUUID(), role: 'ROLE_USER', taskId, parts: [{ text }] };
  if (metadata) m.metadata = metadata;
  if (extensions) m.extensions = extensions;
  return m;
}

// What each form of a task page sends.
const ACTIONS = {
  send: (taskId, form) => rpc('SendMessage', {
    message: message(taskId, form.elements.text.value),
    configuration: { returnImmediately: true },
  }),
  'answer-help': (taskId, form, submitter) => rpc('SendMessage', {
    message: message(taskId, submitter?.value || form.elements.answer.value),
    configuration: { returnImmediately: true },
  }),
  'answer-gate': (taskId, form, submitter) => rpc('SendMessage', {
    message: message(taskId, submitter.value, {
      [ENVELOPE_URI]: { kind: 'answer', replyTo: form.dataset.gate, choice: submitter.value },
    }),
    configuration: { returnImmediately: true },
  }, [ENVELOPE_URI]),
  'approve-tools': (taskId, form) => {
    const approvals = [...form.querySelectorAll('input[type=radio]:checked')].map((r) => ({
      id: r.name,
      approved: r.value === 'approve',
    }));
    return rpc('SendMessage', {
      message: message(taskId, '', { [HITL_URI]: { type: 'tool_approval_response', approvals } }, [HITL_URI]),
      configuration: { returnImmediately: true },
    }, [HITL_URI]);
  },
  cancel: (taskId) => rpc('CancelTask', { id: taskId }),
  'a2ui-action': (taskId, form) => {
    const m = message(taskId, '', undefined, [A2UI_URI]);
    const action = {
      name: form.dataset.name,
      surfaceId: form.dataset.surface,
      sourceComponentId: form.dataset.component,
      timestamp: new Date().toISOString(),
      context: actionContext(form),
    };
    m.parts = [{ data: { version: 'v0.9', action }, mediaType: 'application/a2ui+json' }];
    return rpc('SendMessage', { message: m, configuration: { returnImmediately: true } }, [A2UI_URI]);
  },
  'set-role': (taskId, form) => {
    const envelope = JSON.parse(form.dataset.envelope);
    for (const p of envelope.participants) {
      if (p.id === form.dataset.participant) p.role = form.elements.role.value;
    }
    const m = message(taskId, '');
    m.parts = [{ data: envelope, mediaType: TASK_MEDIA }];
    return rpc('SendMessage', { message: m, configuration: { returnImmediately: true } });
  },
};

// A bound input's value as its data model holds it.
function inputValue(el) {
  if (el.type === 'checkbox') return el.checked;
  if (el.dataset.kind === 'number') return el.value === '' ? null : Number(el.value);
  if (el.dataset.kind === 'list') return [...el.selectedOptions].map((o) => o.value);
  return el.value;
}

// The Button's context: each entry bound to a path takes what the person entered there (the
// server drew the model's value; an input bound to the same path has the newer one).
function actionContext(form) {
  const surface = form.closest('.a2ui-surface');
  const context = {};
  for (const [key, entry] of Object.entries(JSON.parse(form.dataset.context || '{}'))) {
    const input = entry.path && [...surface.querySelectorAll('[data-path]')].find((el) => el.dataset.path === entry.path);
    context[key] = input ? inputValue(input) : entry.value;
  }
  return context;
}

// Two-way bindings on a surface: what is typed shows wherever the same path is read.
function wireSurfaces(root) {
  for (const surface of root.querySelectorAll('.a2ui-surface')) {
    surface.addEventListener('input', (e) => {
      const path = e.target.dataset?.path;
      if (!path) return;
      e.target.tlEntered = true; // a property, not an attribute: the page's HTML stays the server's
      for (const t of surface.querySelectorAll('[data-bound]')) {
        if (t.dataset.bound === path) t.textContent = String(inputValue(e.target) ?? '');
      }
    });
  }
}

// Values entered on a surface survive the page's refresh (the server only knows the model's).
function keepEntered(now, then) {
  for (const el of [...now.querySelectorAll('.a2ui-surface [data-path]')].filter((e) => e.tlEntered)) {
    const surface = el.closest('.a2ui-surface').dataset.surface;
    const twin = [...then.querySelectorAll('.a2ui-surface [data-path]')].find(
      (t) => t.closest('.a2ui-surface').dataset.surface === surface && t.dataset.path === el.dataset.path && t.name === el.name,
    );
    if (!twin) continue;
    if (el.type === 'checkbox') twin.checked = el.checked;
    else if (el.dataset.kind === 'list') for (const o of twin.options) o.selected = [...el.selectedOptions].some((s) => s.value === o.value);
    else twin.value = el.value;
    twin.tlEntered = true;
  }
}

function wireActions(root) {
  const task = root.querySelector('#task');
  if (!task) return;
  wireSurfaces(task);
  for (const form of task.querySelectorAll('form[data-rpc]')) {
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const status = task.querySelector('.result');
      try {
        await ACTIONS[form.dataset.rpc](task.dataset.taskId, form, e.submitter);
        status.textContent = 'Sent.';
        form.reset();
        await refresh(true);
      } catch (err) {
        status.textContent = `Not done: ${err.message}`;
      }
    });
  }
}

// The timeline slider: shows the event it is at as it moves, and redraws the page there once
// let go (the form is a plain GET: without the script its button does the same).
function wireSlider(root) {
  for (const range of root.querySelectorAll('[data-as-of-slider]')) {
    const out = range.form.querySelector('output');
    range.addEventListener('input', () => { out.textContent = `#${range.value} of ${range.max}`; });
    range.addEventListener('change', () => range.form.submit());
  }
}

// Replaces the parts of the page the server renders anew, unless the person is typing.
async function refresh(force) {
  // A past state does not move; the slider is being moved.
  if (document.querySelector('#task[data-as-of]')) return;
  const active = document.activeElement;
  if (!force && active && active.matches('[data-as-of-slider]')) return;
  if (!force && active && (active.tagName === 'TEXTAREA' || active.tagName === 'INPUT') && active.value) return;
  const r = await fetch(location.href, { headers: { Accept: 'text/html' } });
  if (!r.ok) return;
  const next = new DOMParser().parseFromString(await r.text(), 'text/html');
  for (const sel of ['#task', '#tasks tbody', 'nav.counts', 'p.more', 'p.empty']) {
    const now = document.querySelector(sel);
    const then = next.querySelector(sel);
    if (now && then && now.outerHTML !== then.outerHTML) {
      if (sel === '#task') keepEntered(now, then);
      now.replaceWith(then);
      if (sel === '#task') { wireActions(document); wireSlider(document); }
    }
  }
}

document.addEventListener('DOMContentLoaded', () => {
  const login = document.querySelector('form#login');
  if (login) {
    login.addEventListener('submit', () => sessionStorage.setItem('tl_token', login.elements.token.value.trim()));
  }
  const logout = document.querySelector('[data-action=logout]');
  if (logout) logout.addEventListener('click', () => sessionStorage.removeItem('tl_token'));
  wireActions(document);
  wireSlider(document);
  if (document.querySelector('#task, #tasks')) setInterval(() => refresh(false).catch(() => {}), REFRESH_MS);
});
