// sealane console: a read-only one-page app fed by /api/stream (server-sent events).
// Every value from the server is put in the page as text (textContent), never as HTML.
'use strict';

const S = {
  deploys: new Map(),   // id -> deploy summary
  detail: null,         // the open deploy: {id, loaded, deploy, board, pending}
  view: '',
  filters: {cluster: '', namespace: '', release: '', status: ''},
  dirty: false,
  rolloutsStale: false,
  releasesStale: false,
};

// ---- DOM helpers -------------------------------------------------------------------------
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = v;
    else if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return e;
}
const badge = (s) => el('span', {class: 'badge s-' + (s || 'unknown'), 'data-status': s || ''}, s || '—');
const view = () => document.getElementById('view');
function time(t) {
  if (!t || t.startsWith('0001')) return '';
  const d = new Date(t);
  return d.toLocaleTimeString([], {hour12: false}) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}
function dateTime(t) {
  if (!t || t.startsWith('0001')) return '';
  return new Date(t).toLocaleString([], {hour12: false});
}
function isoSecond(t, plus) {
  const d = new Date(t); d.setMilliseconds(0); d.setSeconds(d.getSeconds() + (plus || 0));
  return d.toISOString().replace('.000Z', 'Z');
}
function copyable(text, label) {
  const code = el('code', {title: text}, text);
  const btn = el('button', {class: 'copy', type: 'button', title: 'copy', onclick: () => copy(text, btn)}, label || 'copy');
  return el('span', {class: 'cmd'}, code, btn);
}
function copy(text, btn) {
  const done = () => { btn.textContent = 'copied'; setTimeout(() => { btn.textContent = 'copy'; }, 1200); };
  if (navigator.clipboard && window.isSecureContext) { navigator.clipboard.writeText(text).then(done, () => {}); return; }
  const ta = el('textarea', {}, text); document.body.append(ta); ta.select();
  try { document.execCommand('copy'); done(); } catch (e) { /* the text stays selectable */ }
  ta.remove();
}
const refText = (r) => r ? `${r.kind}/${r.name}` : '';
const refKey = (r) => r ? `${r.apiVersion}|${r.kind}|${r.namespace || ''}|${r.name}` : '';

// eventsCommand is the `sealane events` command that prints an entry (or a whole deploy).
function eventsCommand(d, entry) {
  const parts = ['sealane events', '--cluster', d.cluster, '-n', d.namespace, '--release', d.release];
  if (entry) {
    if (entry.log) parts.push('--logs');
    else parts.push('--type', entry.type);
    const at = entry.stored && !entry.stored.startsWith('0001') ? entry.stored : entry.time;
    parts.push('--since', isoSecond(at), '--until', isoSecond(at, 1), '-o', 'json');
  } else if (d.started && !d.started.startsWith('0001')) {
    parts.push('--since', isoSecond(d.started));
  }
  return parts.join(' ');
}

// ---- the live stream ---------------------------------------------------------------------
function connect() {
  const es = new EventSource('/api/stream');
  const live = document.getElementById('live');
  es.onopen = () => { live.textContent = 'live'; live.className = 'live on'; };
  es.onerror = () => { live.textContent = 'reconnecting…'; live.className = 'live off'; };
  es.addEventListener('hello', (m) => {
    const h = JSON.parse(m.data);
    S.deploys = new Map((h.deploys || []).map((d) => [d.id, d]));
    if (S.detail) loadDetail(S.detail.id); // events may have been missed while away
    S.releasesStale = true;
    schedule();
  });
  es.addEventListener('entry', (m) => {
    const msg = JSON.parse(m.data);
    S.deploys.set(msg.deploy.id, msg.deploy);
    const det = S.detail;
    if (det && det.id === msg.deploy.id) {
      det.deploy = msg.deploy;
      if (det.loaded) det.board.add(msg.entry); else det.pending.push(msg.entry);
    }
    if (msg.entry.type === 'release_recorded') S.releasesStale = true;
    schedule();
  });
  es.addEventListener('rollout', () => { S.rolloutsStale = true; schedule(); });
}

// schedule re-renders the open view at most a few times a second.
function schedule() {
  if (S.dirty) return;
  S.dirty = true;
  setTimeout(() => { S.dirty = false; refresh(); }, 150);
}

// ---- the resource board: the CLI's progress table (pkg/progress), mirrored ------------------
class Board {
  constructor() { this.reset(); this.timeline = []; this.seen = new Set(); this.phases = new Map(); this.logs = new Map(); this.failures = []; }
  reset() { this.rows = new Map(); }
  row(ref, until) {
    until = until || 'ready';
    const k = refKey(ref) + '\u0000' + until;
    let r = this.rows.get(k);
    if (!r) { r = {ref, until, state: 'WAITING'}; this.rows.set(k, r); }
    return r;
  }
  tracked(ref, until) {
    if (!until) {
      const all = [...this.rows.values()];
      for (let i = all.length - 1; i >= 0; i--) if (refKey(all[i].ref) === refKey(ref)) return all[i];
    }
    return this.row(ref, until);
  }
  fail(failures) {
    for (const f of failures || []) {
      const k = refKey(f.resource) + '\u0000' + f.reason;
      if (this.failures.some((g) => refKey(g.resource) + '\u0000' + g.reason === k)) continue;
      this.failures.push(f);
      if (!f.resource || !f.resource.name) continue;
      let matched = [...this.rows.values()].filter((r) => refKey(r.ref) === refKey(f.resource) && r.state !== 'READY');
      if (!matched.length) matched = [this.row(f.resource, 'ready')];
      for (const r of matched) { r.state = 'FAILED'; r.reason = f.reason; }
    }
  }
  phase(n) { let p = this.phases.get(n); if (!p) { p = {n}; this.phases.set(n, p); } return p; }
  add(e) {
    if (this.seen.has(e.n)) return;
    this.seen.add(e.n);
    const d = e.data || {};
    if (e.log) { this.addLogs(d); this.timeline.push(e); return; }
    this.timeline.push(e);
    switch (e.type) {
      case 'requested': this.reset(); this.failures = []; break;
      case 'phase_applied': {
        const p = this.phase(d.phase); p.of = d.phases; p.applied = d.applied || []; p.appliedAt = e.time;
        for (const w of d.waits || []) {
          const r = this.row(w.resource, w.until);
          Object.assign(r, {state: 'WAITING', nonBlocking: !!w.nonBlocking, phase: d.phase});
          delete r.reason;
        }
        break;
      }
      case 'resource_progressed': {
        const r = this.tracked(d.resource, d.until);
        Object.assign(r, {state: d.state, ready: d.ready, desired: d.desired, message: d.message || '',
          errors: d.errors || 0, lastError: d.lastError || '', pods: d.pods || [], nonBlocking: !!d.nonBlocking});
        if (d.state !== 'FAILED') delete r.reason;
        break;
      }
      case 'phase_tracked': {
        const p = this.phase(d.phase); p.of = d.phases; p.tracked = d.ready ? 'ready' : 'failed';
        this.fail(d.failures); break;
      }
      case 'failed': this.fail(d.failures); this.failedStage = d.stage; break;
    }
  }
  addLogs(d) {
    for (const l of d.lines || []) {
      let key = refKey(d.resource) + '\u0000' + (d.container || '');
      let title = 'Logs for ' + refText(d.resource) + (d.container ? ', container/' + d.container : '');
      if (l.stream === 'event') { key = refKey(d.resource) + '\u0000events'; title = 'Events for ' + refText(d.resource); }
      if (l.stream === 'notice') { key = refKey(d.resource) + '\u0000notes'; title = 'Note on ' + refText(d.resource); }
      let b = this.logs.get(key);
      if (!b) { b = {title, ref: d.resource, events: l.stream === 'event', lines: []}; this.logs.set(key, b); }
      b.lines.push((d.pod ? d.pod + ': ' : '') + l.text);
      if (b.lines.length > 500) b.lines.shift();
    }
  }
}

// ---- routing -----------------------------------------------------------------------------
function route() {
  const h = location.hash.replace(/^#\/?/, '');
  const [name, ...rest] = h.split('/');
  S.view = name || 'deploys';
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.classList.toggle('active', a.dataset.nav === S.view || (S.view === 'deploy' && a.dataset.nav === 'deploys') ||
      (S.view === 'release' && a.dataset.nav === 'releases'));
  }
  S.detail = null;
  const v = view(); v.replaceChildren();
  switch (S.view) {
    case 'deploy': openDetail(decodeURIComponent(rest.join('/'))); break;
    case 'releases': v.append(el('h1', {}, 'Releases'), el('div', {id: 'releases'})); S.releasesStale = true; break;
    case 'release': v.append(el('h1', {}, 'Release history'), el('div', {id: 'release'})); loadReleaseHistory(...rest.map(decodeURIComponent)); break;
    case 'rollouts': v.append(el('h1', {}, 'Rollouts'), el('div', {id: 'rollouts'})); S.rolloutsStale = true; break;
    case 'deadletters': v.append(el('h1', {}, 'Dead letters'), el('div', {id: 'deadletters'})); loadDeadLetters(); break;
    default: S.view = 'deploys'; deploysView(v);
  }
  refresh();
}

function refresh() {
  switch (S.view) {
    case 'deploys': renderDeploys(); break;
    case 'deploy': renderDetail(); break;
    case 'releases': if (S.releasesStale) { S.releasesStale = false; loadReleases(); } break;
    case 'rollouts': if (S.rolloutsStale) { S.rolloutsStale = false; loadRollouts(); } break;
  }
}

async function getJSON(url) {
  const r = await fetch(url, {credentials: 'same-origin', cache: 'no-store'});
  if (!r.ok) throw new Error(url + ': ' + r.status + ' ' + (await r.text()));
  return r.json();
}
function failBox(container, err) { container.replaceChildren(el('div', {class: 'reason'}, String(err.message || err))); }

// ---- deploys -----------------------------------------------------------------------------
function deploysView(v) {
  const f = S.filters;
  const input = (key, ph) => el('input', {placeholder: ph, value: f[key], 'data-filter': key,
    oninput: (e) => { f[key] = e.target.value.trim(); renderDeploys(); }});
  const status = el('select', {'data-filter': 'status', onchange: (e) => { f.status = e.target.value; renderDeploys(); }},
    ['', 'running', 'succeeded', 'failed'].map((s) => el('option', {value: s, selected: s === f.status}, s || 'any status')));
  v.append(el('h1', {}, 'Deploys'), el('div', {class: 'filters'}, input('cluster', 'cluster'), input('namespace', 'namespace'),
    input('release', 'release'), status), el('div', {id: 'deploys'}));
}

function renderDeploys() {
  const box = document.getElementById('deploys');
  if (!box) return;
  const f = S.filters;
  const match = (d) => (!f.cluster || d.cluster.includes(f.cluster)) && (!f.namespace || d.namespace.includes(f.namespace)) &&
    (!f.release || d.release.includes(f.release)) && (!f.status || d.status === f.status);
  const list = [...S.deploys.values()].filter(match).sort((a, b) =>
    (a.status === 'running') !== (b.status === 'running') ? (a.status === 'running' ? -1 : 1) : (b.updated || '').localeCompare(a.updated || ''));
  if (!list.length) { box.replaceChildren(el('div', {class: 'card empty'}, 'No deploys in the console\'s window yet.')); return; }
  const rows = list.map((d) => el('tr', {class: 'deploy', 'data-deploy': d.id, 'data-release': d.release, 'data-status': d.status},
    el('td', {}, badge(d.status)),
    el('td', {}, el('a', {href: '#/deploy/' + encodeURIComponent(d.id)}, d.release)),
    el('td', {}, d.namespace), el('td', {}, d.cluster), el('td', {}, d.operation || ''),
    el('td', {}, d.revision || ''), el('td', {}, d.chart || ''),
    el('td', {}, d.phases ? `${d.phase}/${d.phases}` : ''),
    el('td', {}, dateTime(d.started)), el('td', {}, time(d.updated)),
    el('td', {}, d.requestedBy || ''), el('td', {class: 'muted'}, d.reason ? d.reason.slice(0, 120) : '')));
  box.replaceChildren(el('table', {},
    el('thead', {}, el('tr', {}, ['Status', 'Release', 'Namespace', 'Cluster', 'Operation', 'Rev', 'Chart', 'Phase', 'Started', 'Updated', 'By', 'Reason'].map((h) => el('th', {}, h)))),
    el('tbody', {}, rows)));
}

// ---- one deploy --------------------------------------------------------------------------
function openDetail(id) {
  S.detail = {id, loaded: false, deploy: S.deploys.get(id), board: new Board(), pending: []};
  view().append(el('div', {id: 'detail'}, el('div', {class: 'empty'}, 'loading…')));
  loadDetail(id);
}

async function loadDetail(id) {
  try {
    const r = await getJSON('/api/deploys/' + encodeURIComponent(id));
    const det = S.detail;
    if (!det || det.id !== id) return;
    det.board = new Board();
    det.deploy = r.deploy;
    for (const e of r.entries) det.board.add(e);
    for (const e of det.pending) det.board.add(e); // the board skips what it has (by n)
    det.pending = []; det.loaded = true;
    renderDetail();
  } catch (err) { failBox(document.getElementById('detail'), err); }
}
