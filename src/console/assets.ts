// The console's stylesheet and script, served from the bundle (no CDN, no inline script: the pages' CSP allows only
// these). The script refreshes the parts of a page marked `data-refresh`, streams a run's output (`data-stream`,
// server-sent events), and sends a realtime prompt with the page's CSRF token.

/** The tab icon: a small rounded square with a prompt caret. */
export const CONSOLE_ICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2f5bea"/>' +
  '<path d="M9 11l6 5-6 5M17 22h7" stroke="#fff" stroke-width="3" fill="none" stroke-linecap="round"/></svg>';

export const CONSOLE_CSS = `
:root { color-scheme: light dark; --fg: #1d2330; --muted: #667085; --bg: #f7f8fa; --card: #fff; --line: #e4e7ec;
  --accent: #2f5bea; --ok: #137a3d; --bad: #b42318; --run: #175cd3; --wait: #93670b; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e9ef; --muted: #98a2b3; --bg: #12151b; --card: #1a1e26;
  --line: #2b313c; --accent: #7c9cff; --ok: #4ac77a; --bad: #ff7a6e; --run: #6ea8ff; --wait: #e0b341; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  background: var(--bg); }
nav { display: flex; gap: 16px; align-items: center; padding: 10px 24px; background: var(--card);
  border-bottom: 1px solid var(--line); }
nav .brand { font-weight: 700; }
nav .spacer { flex: 1; }
nav .user { color: var(--muted); }
main { max-width: 1200px; margin: 0 auto; padding: 16px 24px 48px; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
h1 { font-size: 22px; margin: 8px 0 16px; display: flex; gap: 12px; align-items: center; }
h2 { font-size: 16px; margin: 0; }
h3 { font-size: 14px; margin: 16px 0 6px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px;
  margin: 0 0 16px; }
section > header { display: flex; gap: 12px; align-items: center; margin-bottom: 10px; }
section > h2 { margin-bottom: 10px; }
.grid { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
@media (max-width: 900px) { .grid { grid-template-columns: 1fr; } }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
thead th { color: var(--muted); font-weight: 600; font-size: 12px; text-transform: uppercase; }
table.fields th { width: 130px; color: var(--muted); font-weight: 500; }
td.reason { color: var(--muted); max-width: 420px; overflow-wrap: anywhere; }
tr.warning td { color: var(--bad); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600;
  border: 1px solid currentColor; }
.badge.succeeded, .count.succeeded { color: var(--ok); }
.badge.failed, .count.failed { color: var(--bad); }
.badge.running, .count.running { color: var(--run); }
.badge.pending, .count.pending { color: var(--wait); }
.counts { display: flex; gap: 10px; flex: 1; }
.count { font-size: 12px; }
.button, button { display: inline-block; background: var(--accent); color: #fff; border: 0; border-radius: 6px;
  padding: 6px 12px; font: inherit; cursor: pointer; }
button.link { background: none; color: var(--accent); padding: 0; }
form.inline { display: inline; }
form.rerun { margin: -8px 0 16px; }
form.filters { display: flex; gap: 12px; align-items: center; margin-bottom: 16px; flex-wrap: wrap; }
form.run, .login form { display: grid; gap: 6px; max-width: 720px; }
form.run button, .login button { justify-self: start; margin-top: 8px; }
input, select, textarea { font: inherit; color: inherit; background: var(--bg); border: 1px solid var(--line);
  border-radius: 6px; padding: 6px 8px; }
textarea { width: 100%; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
pre.output, pre.result, pre.template { font: 12.5px/1.5 ui-monospace, SFMono-Regular, Menlo, monospace;
  background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 10px; max-height: 560px;
  overflow: auto; }
pre.output:empty::before { content: "No output yet."; color: var(--muted); }
#prompt-form { display: flex; gap: 8px; margin-bottom: 8px; align-items: flex-start; }
.hint, .empty, .crumbs { color: var(--muted); }
.error { color: var(--bad); }
.login { max-width: 560px; margin: 48px auto; }
`;

export const CONSOLE_JS = `'use strict';
(() => {
  const csrf = document.body.dataset.csrf || '';

  // Parts that refresh themselves while they can change.
  for (const el of document.querySelectorAll('[data-refresh]')) {
    const url = el.dataset.refresh;
    const tick = async () => {
      try {
        const res = await fetch(url, { credentials: 'same-origin', headers: { accept: 'text/html' } });
        if (res.status === 401) { location.assign('/login'); return; }
        if (res.ok) {
          el.innerHTML = await res.text();
          // A run that moved on (started, or ended) is shown anew: its output stream, its result.
          const phase = res.headers.get('x-agent-phase');
          if (phase && phase !== el.dataset.phase) { location.reload(); return; }
        }
      } catch (_) { /* next tick */ }
      setTimeout(tick, 2000);
    };
    setTimeout(tick, 2000);
  }

  // A run's output, as it is written (server-sent events of readable text).
  const out = document.getElementById('output');
  if (out && out.dataset.stream) {
    const source = new EventSource(out.dataset.stream);
    source.onmessage = (e) => {
      const follow = out.scrollTop + out.clientHeight >= out.scrollHeight - 8;
      out.textContent += JSON.parse(e.data);
      if (follow) out.scrollTop = out.scrollHeight;
    };
    source.addEventListener('end', () => { source.close(); out.dataset.ended = 'true'; });
    source.onerror = () => { if (source.readyState === EventSource.CLOSED) out.dataset.ended = 'true'; };
  }

  // A prompt to a realtime run: the answer streams into the reply box.
  const form = document.getElementById('prompt-form');
  const reply = document.getElementById('reply');
  if (form && reply) {
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const text = new FormData(form).get('prompt');
      const button = form.querySelector('button');
      button.disabled = true;
      reply.textContent = '';
      reply.dataset.state = 'sending';
      try {
        const res = await fetch(form.dataset.action, {
          method: 'POST', credentials: 'same-origin',
          headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
          body: JSON.stringify({ prompt: text }),
        });
        if (!res.ok || !res.body) {
          let message = res.statusText;
          try { message = (await res.json()).message || message; } catch (_) { /* not JSON */ }
          reply.textContent = 'Error ' + res.status + ': ' + message;
          reply.dataset.state = 'error';
          return;
        }
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          reply.textContent += value;
        }
        reply.dataset.state = 'done';
      } catch (err) {
        reply.textContent += '\\n' + String(err);
        reply.dataset.state = 'error';
      } finally {
        button.disabled = false;
      }
    });
  }
})();
`;
