// sealane console: the deploy detail, releases, rollouts and dead-letters views (app.js has
// the stream, the router and the deploys list).
'use strict';

function renderDetail() {
  const det = S.detail, box = document.getElementById('detail');
  if (!det || !box || !det.loaded) return;
  const d = det.deploy, b = det.board;
  const parts = [
    el('h1', {}, `${d.release} `, badge(d.status), el('span', {class: 'muted'}, ` ${d.operation || ''} revision ${d.revision || '—'}`)),
    el('div', {class: 'card'}, el('dl', {class: 'kv'},
      el('dt', {}, 'Deploy id'), el('dd', {}, copyable(d.id)),
      el('dt', {}, 'Target'), el('dd', {}, `cluster ${d.cluster} · namespace ${d.namespace} · release ${d.release}`),
      el('dt', {}, 'Chart'), el('dd', {}, d.chart || ''),
      el('dt', {}, 'Requested by'), el('dd', {}, (d.requestedBy || '—') + (d.commit ? ` · commit ${d.commit}` : '')),
      el('dt', {}, 'Started'), el('dd', {}, dateTime(d.started)),
      d.rollout ? [el('dt', {}, 'Rollout'), el('dd', {}, el('a', {href: '#/rollouts'}, d.rollout))] : null,
      el('dt', {}, 'Its events'), el('dd', {}, copyable(eventsCommand(d))),
      d.truncated ? [el('dt', {}, 'Note'), el('dd', {}, 'older events of this deploy were dropped (console limit)')] : null)),
  ];
  if (d.status === 'failed') parts.push(failure(d, b));
  parts.push(el('h2', {}, 'Phases'), phases(b), el('h2', {}, 'Resources'), resources(b));
  const logs = [...b.logs.values()];
  if (logs.length) parts.push(el('h2', {}, 'Logs and Kubernetes events'), ...logs.map(logBlock));
  parts.push(el('h2', {}, 'Timeline'), timeline(d, b));
  box.replaceChildren(...parts);
}

function failure(d, b) {
  const failed = new Set(b.failures.filter((f) => f.resource && f.resource.name).map((f) => refKey(f.resource)));
  const evBlocks = [...b.logs.values()].filter((l) => l.events && failed.has(refKey(l.ref)));
  return el('div', {id: 'failure'},
    el('div', {class: 'reason', 'data-testid': 'reason'}, el('strong', {}, 'Failed' + (b.failedStage ? ` at ${b.failedStage}` : '') + ': '), d.reason || ''),
    b.failures.filter((f) => f.resource && f.resource.name).map((f) =>
      el('div', {class: 'reason', 'data-failed-resource': refText(f.resource)}, el('strong', {}, refText(f.resource) + ': '), f.reason)),
    evBlocks.map(logBlock));
}

function phases(b) {
  const ps = [...b.phases.values()].sort((x, y) => x.n - y.n);
  if (!ps.length) return el('div', {class: 'muted'}, 'no phase applied yet');
  return el('div', {class: 'phases'}, ps.map((p) => {
    const counts = {};
    for (const a of p.applied || []) counts[a.action] = (counts[a.action] || 0) + 1;
    const summary = Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(', ');
    return el('div', {class: 'phase', 'data-phase': p.n}, el('strong', {}, `Phase ${p.n + 1}/${p.of || '?'}`), ' ',
      badge(p.tracked || 'applied'), el('div', {class: 'muted'}, summary || 'nothing to apply'));
  }));
}

function resources(b) {
  const rows = [...b.rows.values()];
  if (!rows.length) return el('div', {class: 'muted'}, 'no resource tracked yet');
  return el('table', {id: 'resources'},
    el('thead', {}, el('tr', {}, ['Resource', 'Wait', 'State', 'Ready', 'Info'].map((h) => el('th', {}, h)))),
    el('tbody', {}, rows.map((r) => {
      const info = [];
      if (r.ref.namespace && S.detail && r.ref.namespace !== S.detail.deploy.namespace) info.push('Namespace:' + r.ref.namespace);
      if (r.message) info.push('Status:"' + r.message + '"');
      if (r.errors) info.push(`Errors:${r.errors}`);
      if (r.lastError) info.push('LastError:"' + r.lastError + '"');
      if (r.reason) info.push('Reason:"' + r.reason + '"');
      if (r.nonBlocking) info.push('non-blocking');
      for (const p of r.pods || []) info.push(`${p.name} ${p.state} ${p.ready}/${p.desired}` + (p.restarts ? ` restarts:${p.restarts}` : '') + (p.message ? ` "${p.message}"` : ''));
      return el('tr', {class: 'res', 'data-resource': refText(r.ref), 'data-state': r.state},
        el('td', {class: 'mono'}, refText(r.ref)), el('td', {}, r.until), el('td', {}, badge(r.state)),
        el('td', {}, r.desired ? `${r.ready || 0}/${r.desired}` : ''), el('td', {class: 'mono'}, info.join('  ')));
    })));
}

function logBlock(l) {
  return el('div', {class: 'logs', 'data-log': l.title}, el('h3', {}, l.title), el('pre', {}, l.lines.join('\n')));
}

function timeline(d, b) {
  const list = b.timeline.slice(-1000);
  return el('table', {id: 'timeline'},
    el('thead', {}, el('tr', {}, ['Time', 'Type', 'What', 'Event id and the command that prints it'].map((h) => el('th', {}, h)))),
    el('tbody', {}, list.map((e) => el('tr', {'data-type': e.type},
      el('td', {class: 'mono'}, time(e.time)), el('td', {}, e.type), el('td', {}, e.line || ''),
      el('td', {}, copyable(e.id), copyable(eventsCommand(d, e)))))));
}

// ---- releases ----------------------------------------------------------------------------
async function loadReleases() {
  const box = document.getElementById('releases');
  if (!box) return;
  try {
    const rels = await getJSON('/api/releases');
    if (!rels.length) { box.replaceChildren(el('div', {class: 'card empty'}, 'No release recorded in the console\'s window yet.')); return; }
    box.replaceChildren(...rels.map((r) => el('div', {class: 'card', 'data-release': r.release},
      el('h2', {}, el('a', {href: releaseHash(r)}, r.release), el('span', {class: 'muted'}, ` namespace ${r.namespace} · cluster ${r.cluster} · `),
        el('a', {href: releaseHash(r), class: 'muted'}, 'whole history')),
      historyTable(r.history))));
  } catch (err) { failBox(box, err); }
}
function releaseHash(r) { return '#/release/' + [r.cluster, r.namespace, r.release].map(encodeURIComponent).join('/'); }

// historyTable is a release's history, newest first.
function historyTable(history) {
  return el('table', {}, el('thead', {}, el('tr', {}, ['Revision', 'Status', 'Chart', 'Time', 'By', 'Commit', 'Deploy', 'Description'].map((h) => el('th', {}, h)))),
    el('tbody', {}, history.slice().reverse().map((h) => el('tr', {'data-revision': h.revision},
      el('td', {}, h.upToDate ? `${h.revision || '—'} (up to date)` : (h.revision || '—')), el('td', {}, badge(h.status || h.outcome)),
      el('td', {}, h.chart || ''), el('td', {}, dateTime(h.time)), el('td', {}, h.requestedBy || ''),
      el('td', {class: 'mono'}, (h.commit || '').slice(0, 12)),
      el('td', {}, h.deploy ? el('a', {href: '#/deploy/' + encodeURIComponent(h.deploy)}, 'events') : ''),
      el('td', {class: 'muted'}, h.reason || '')))));
}

// One release's whole history: its records in the cluster when the console can read them
// (GET /api/releases/CLUSTER/NS/NAME), else the events, with the reason said on the page.
async function loadReleaseHistory(cluster, namespace, release) {
  const box = document.getElementById('release');
  if (!box) return;
  try {
    const r = await getJSON('/api/releases/' + [cluster, namespace, release].map(encodeURIComponent).join('/'));
    const source = r.source === 'cluster'
      ? el('p', {class: 'muted'}, `From the release records in cluster ${r.cluster}: ${r.history.length} revision${r.history.length === 1 ? '' : 's'}, whoever made them.`)
      : el('p', {class: 'reason'}, `From the event stream only: ${r.note}.`);
    box.replaceChildren(el('div', {class: 'card', 'data-history-source': r.source, 'data-release': r.release},
      el('h2', {}, r.release, el('span', {class: 'muted'}, ` namespace ${r.namespace} · cluster ${r.cluster}`)),
      source, historyTable(r.history)));
  } catch (err) { failBox(box, err); }
}

// ---- rollouts: counts per wave and state, then the grid or a page of clusters ------------
// The API sends a rollout of few clusters whole (drawn as the waves × clusters grid) and a
// bigger one as its counts and a page of clusters: S.rolloutPages keeps, per rollout, the
// state, wave and offset picked on the page, read with GET /api/rollouts/ID?….
S.rolloutPages = new Map();
const ROLLOUT_STATES = ['pending', 'deploying', 'testing', 'succeeded', 'failed', 'skipped', 'offline-waiting', 'reverting', 'reverted'];
const ROLLOUT_PAGE = 100;

async function loadRollouts() {
  const box = document.getElementById('rollouts');
  if (!box) return;
  try {
    const ros = await getJSON('/api/rollouts');
    if (!ros.length) { box.replaceChildren(el('div', {class: 'card empty'}, 'No rollout (none ran, or no coordinator on this NATS).')); return; }
    const picked = await Promise.all(ros.map((r) => S.rolloutPages.has(r.id) ? getJSON(rolloutPageURL(r.id)).catch(() => r) : r));
    box.replaceChildren(...picked.map(rolloutCard));
  } catch (err) { failBox(box, err); }
}

function rolloutPageURL(id) {
  const p = S.rolloutPages.get(id) || {};
  const q = new URLSearchParams({state: p.state || '', wave: p.wave || '', offset: String(p.offset || 0), limit: String(ROLLOUT_PAGE)});
  return '/api/rollouts/' + encodeURIComponent(id) + '?' + q.toString();
}

// pickRolloutPage changes the state, wave or offset shown of rollout id and redraws its card.
async function pickRolloutPage(id, change) {
  const p = Object.assign({state: '', wave: '', offset: 0}, S.rolloutPages.get(id), change);
  S.rolloutPages.set(id, p);
  const card = document.querySelector(`[data-rollout="${CSS.escape(id)}"]`);
  try {
    const r = await getJSON(rolloutPageURL(id));
    if (card) card.replaceWith(rolloutCard(r));
  } catch (err) { if (card) failBox(card, err); }
}

function rolloutCard(r) {
  const page = r.page || {};
  const whole = page.state === 'all' && !page.wave && (r.clusters || []).length === (r.summary || {}).clusters;
  return el('div', {class: 'card', 'data-rollout': r.id},
    el('h2', {}, `rollout ${r.id} `, badge(r.queued ? 'queued' : r.phase),
      el('span', {class: 'muted'}, ` release ${r.release} · namespace ${r.namespace}` + (r.waves && r.waves.length ? ` · wave ${Math.min(r.wave + 1, r.waves.length)}/${r.waves.length}` : '') +
        ` · ${(r.summary || {}).clusters || 0} clusters`)),
    r.reason ? el('div', {class: 'reason'}, r.reason) : null,
    rolloutSummary(r),
    whole && !S.rolloutPages.has(r.id) ? rolloutGrid(r) : rolloutPage(r),
    el('div', {class: 'muted'}, 'In the terminal: ', copyable(`sealane rollout status ${r.id}`), ' — each cluster links to its deploy and that deploy\'s events.'));
}

// rolloutSummary is the table of each wave's clusters counted per state; a count picks those
// clusters below.
function rolloutSummary(r) {
  const sum = r.summary || {counts: {}, waves: []};
  const states = ROLLOUT_STATES.filter((st) => (sum.counts || {})[st]);
  const cell = (n, st, wave) => el('td', {'data-count': st}, n
    ? el('button', {class: 'link', type: 'button', title: `show the ${st} clusters` + (wave ? ` of wave ${wave}` : ''),
      onclick: () => pickRolloutPage(r.id, {state: st, wave: wave || '', offset: 0})}, String(n))
    : el('span', {class: 'muted'}, '·'));
  const row = (name, status, w, wave) => el('tr', {'data-summary-wave': wave || ''},
    el('td', {}, name), el('td', {}, status ? badge(status) : ''), el('td', {}, String(w.clusters || 0)),
    states.map((st) => cell((w.counts || {})[st] || 0, st, wave)));
  return el('table', {class: 'summary'},
    el('thead', {}, el('tr', {}, ['Wave', 'Wave state', 'Clusters', ...states].map((h) => el('th', {}, h)))),
    el('tbody', {}, (sum.waves || []).map((w) => row(w.name, w.status, w, w.name)),
      (sum.waves || []).length > 1 ? row('all', '', sum, '') : null));
}

function deployOfCluster(r, c) {
  return [...S.deploys.values()].filter((d) => d.rollout === r.id && d.cluster === c.cluster)
    .sort((a, b) => (b.updated || '').localeCompare(a.updated || ''))[0];
}

function clusterCell(r, c) {
  const dep = deployOfCluster(r, c);
  return el('td', {class: 'cell', 'data-cluster': c.cluster, 'data-state': c.status, title: c.reason || ''},
    badge(c.status), c.revision ? el('div', {class: 'muted'}, `rev ${c.revision}` + (c.attempt > 1 ? ` · attempt ${c.attempt}` : '')) : null,
    dep ? el('div', {}, el('a', {href: '#/deploy/' + encodeURIComponent(dep.id)}, 'events')) : null);
}

// rolloutGrid draws a rollout of few clusters as waves × clusters.
function rolloutGrid(r) {
  const clusters = [...new Set((r.clusters || []).map((c) => c.cluster))];
  return el('table', {class: 'grid'},
    el('thead', {}, el('tr', {}, el('th', {}, 'Wave'), el('th', {}, 'Wave state'), clusters.map((c) => el('th', {}, c)))),
    el('tbody', {}, (r.waves || []).map((w, i) => el('tr', {'data-wave': w.name},
      el('td', {}, w.name), el('td', {}, badge(w.status)),
      clusters.map((name) => {
        const c = (r.clusters || []).find((x) => x.cluster === name && x.wave === i);
        return c ? clusterCell(r, c) : el('td', {class: 'cell muted'}, '·');
      })))));
}

// rolloutPage draws the filters, one row per cluster of the page, and the paging buttons.
function rolloutPage(r) {
  const page = r.page || {};
  const clusters = r.clusters || [];
  const state = el('select', {'data-filter': 'rollout-state', onchange: (e) => pickRolloutPage(r.id, {state: e.target.value, offset: 0})},
    [['unsettled', 'not succeeded'], ['all', 'every state'], ...ROLLOUT_STATES.map((st) => [st, st])].map(([v, label]) =>
      el('option', {value: v, selected: page.state === v ? 'selected' : null}, label)));
  const wave = el('select', {'data-filter': 'rollout-wave', onchange: (e) => pickRolloutPage(r.id, {wave: e.target.value, offset: 0})},
    el('option', {value: ''}, 'every wave'),
    (r.waves || []).map((w) => el('option', {value: w.name, selected: page.wave === w.name ? 'selected' : null}, w.name)));
  const from = page.offset || 0, limit = page.limit || ROLLOUT_PAGE, total = page.total || 0;
  const pager = el('div', {class: 'pager'},
    el('button', {type: 'button', 'data-page': 'prev', disabled: from === 0 ? 'disabled' : null,
      onclick: () => pickRolloutPage(r.id, {state: page.state, wave: page.wave, offset: Math.max(0, from - limit)})}, '‹ previous'),
    el('span', {class: 'muted', 'data-page-range': ''}, total ? `${Math.min(from + 1, total)}–${Math.min(from + clusters.length, total)} of ${total}` : 'no cluster matches'),
    el('button', {type: 'button', 'data-page': 'next', disabled: from + clusters.length >= total ? 'disabled' : null,
      onclick: () => pickRolloutPage(r.id, {state: page.state, wave: page.wave, offset: from + limit})}, 'next ›'));
  const waveName = (i) => ((r.waves || [])[i] || {}).name || '';
  return el('div', {class: 'rollout-page'},
    el('div', {class: 'filters'}, state, wave, pager),
    clusters.length ? el('table', {class: 'clusters'},
      el('thead', {}, el('tr', {}, ['Wave', 'Cluster', 'State', 'Revision', 'Reason'].map((h) => el('th', {}, h)))),
      el('tbody', {}, clusters.map((c) => {
        const cell = clusterCell(r, c);
        return el('tr', {'data-cluster': c.cluster, 'data-state': c.status},
          el('td', {}, waveName(c.wave)), el('td', {class: 'mono'}, c.cluster), cell,
          el('td', {}, c.revision ? String(c.revision) + (c.previousRevision && c.previousRevision !== c.revision ? ` (from ${c.previousRevision})` : '') : ''),
          el('td', {class: 'muted'}, c.reason || ''));
      }))) : el('div', {class: 'empty'}, page.state === 'unsettled' ? 'Every cluster' + (page.wave ? ` of wave ${page.wave}` : '') + ' succeeded.' : 'No cluster matches.'));
}

// ---- dead letters ------------------------------------------------------------------------
async function loadDeadLetters() {
  const box = document.getElementById('deadletters');
  if (!box) return;
  try {
    const dls = await getJSON('/api/deadletters');
    if (!dls.length) { box.replaceChildren(el('div', {class: 'card empty'}, 'No dead letters: every stage handled every message.')); return; }
    box.replaceChildren(el('p', {class: 'muted'}, 'Messages a stage gave up on. ', copyable('sealane events --dead-letters')),
      el('table', {}, el('thead', {}, el('tr', {}, ['Id', 'Time', 'Consumer', 'Deliveries', 'Type', 'Deploy', 'Subject', 'Reason'].map((h) => el('th', {}, h)))),
        el('tbody', {}, dls.map((x) => el('tr', {class: 'deadletter', 'data-id': x.id},
          el('td', {}, x.id), el('td', {}, dateTime(x.time)), el('td', {}, x.consumer), el('td', {}, x.deliveries),
          el('td', {}, x.type || '—'),
          el('td', {}, x.deployId ? el('a', {href: '#/deploy/' + encodeURIComponent(x.deployId)}, x.deployId) : '—'),
          el('td', {class: 'mono'}, x.subject), el('td', {class: 'reason-cell'}, x.reason))))));
  } catch (err) { failBox(box, err); }
}

window.addEventListener('hashchange', route);
// Dead letters are read on demand; rollouts are pushed, and read again now and then in case a
// change came while the console was not watching yet.
setInterval(() => {
  if (S.view === 'deadletters') loadDeadLetters();
  if (S.view === 'rollouts') loadRollouts();
}, 5000);
route();
connect();
