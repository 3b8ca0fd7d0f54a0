// lockd status page. It reads the node's JSON API and keeps itself current:
// the lists (locks, elections, sessions) through blocking queries
// (?index=N&wait=30s answer as soon as the list's index passes N), the
// cluster panel by asking this node every few seconds, since that answer is
// the node's own view and has no index to wait on.
'use strict';

const PAGE = 50;               // items per page of each list
const WAIT = '30s';            // how long one blocking query may wait
const CLUSTER_EVERY = 2000;    // ms between reads of /v1/cluster
const MIN_GAP = 500;           // ms at least between two reads of one list
const FREED_FOR = 120000;      // ms a lock that left the list stays shown as free
const TOKEN_KEY = 'lockd.token';

// ApiError is an answer that was not 2xx: the API's {"error","code"}, or
// what could be said about a body that was not JSON.
class ApiError extends Error {
  constructor(status, message, code, retryAfter) {
    super(message);
    this.status = status;
    this.code = code || '';
    this.retryAfter = retryAfter;
  }
}

function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

// api GETs path and returns the decoded JSON body (or the text when text is
// set), throwing ApiError for any other status.
async function api(path, signal, text) {
  const headers = {Accept: text ? 'text/plain' : 'application/json'};
  if (token()) headers.Authorization = 'Bearer ' + token();
  const res = await fetch(path, {headers, signal, cache: 'no-store', credentials: 'omit'});
  if (res.ok) return text ? res.text() : res.json();
  let body = null;
  try { body = await res.json(); } catch (e) { /* not JSON: use the status line */ }
  const retry = Number(res.headers.get('Retry-After')) || 0;
  throw new ApiError(res.status, (body && body.error) || (res.status + ' ' + res.statusText),
    body && body.code, retry);
}

function sleep(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }

// wakeCluster ends the cluster loop's current pause (a new token came).
let wakeCluster = () => {};

function nap(ms) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    wakeCluster = () => { clearTimeout(t); resolve(); };
  });
}

// backoff is the pause after the n-th failure in a row: the server's
// Retry-After when it gave one, else doubling from 1 s up to 15 s.
function backoff(n, retryAfter) {
  if (retryAfter > 0) return retryAfter * 1000;
  return Math.min(1000 * 2 ** (n - 1), 15000);
}

// el builds an element: attrs are attributes (class, title, data-*, href),
// children are nodes or strings (always inserted as text, never as HTML).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c !== undefined && c !== null && c !== false) e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function $(sel) { return document.querySelector(sel); }

function setText(sel, v) { $(sel).textContent = v === undefined || v === null || v === '' ? '–' : String(v); }

// cell is a table cell with the column's name, which narrow screens show
// beside the value (style.css turns each row into a card).
function cell(label, ...children) { return el('td', {'data-label': label}, ...children); }

function shortID(id) { return id ? id.slice(0, 8) : ''; }

// parseDuration reads a Go duration string ("1m2.5s", "850ms") as ms.
function parseDuration(s) {
  if (!s) return null;
  const unit = {h: 3600e3, m: 60e3, s: 1e3, ms: 1, us: 1e-3, 'µs': 1e-3, ns: 1e-6};
  let ms = 0;
  let matched = false;
  for (const m of String(s).matchAll(/([0-9.]+)(h|ms|m|s|us|µs|ns)/g)) {
    ms += parseFloat(m[1]) * unit[m[2]];
    matched = true;
  }
  return matched ? (s.startsWith('-') ? -ms : ms) : null;
}

function formatMs(ms) {
  if (ms === null) return '–';
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
  return Math.floor(ms / 60000) + ' min ' + Math.round((ms % 60000) / 1000) + ' s';
}

function clock(d) { return d.toLocaleTimeString([], {hour12: false}); }

// --- problems and liveness ----------------------------------------------

const problems = new Map(); // source -> message

// report records the outcome of a read from source: err, or success when
// err is null. A refused token is one problem, whichever read met it.
function report(source, err) {
  if (err && err.status === 401) source = 'access';
  if (err) problems.set(source, err.message || String(err));
  else problems.delete(source);
  const box = $('#alert');
  box.replaceChildren(...[...problems].map(([src, msg]) => el('div', {}, el('strong', {}, src + ': '), msg)));
  box.hidden = problems.size === 0;
  const live = $('#live');
  live.dataset.state = problems.size ? 'error' : 'ok';
  live.title = problems.size ? 'some reads fail; retrying' : 'up to date';
  if (!err) setText('#updated', 'updated ' + clock(new Date()));
}

// --- token (ACLs on) -----------------------------------------------------

let restartAll = () => {};

function askToken() {
  $('#token-form').hidden = false;
}

function setupToken() {
  $('#token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const v = $('#token').value.trim();
    if (!v) return;
    sessionStorage.setItem(TOKEN_KEY, v);
    $('#token').value = '';
    $('#token-form').hidden = true;
    problems.clear();
    report('token', null);
    restartAll();
  });
}

// --- cluster panel -------------------------------------------------------

let leaderNow = false;

function renderCluster(c) {
  leaderNow = c.state === 'Leader' || c.state === 'coordinator';
  setText('#node-title', 'node ' + c.node_id + ' · ' + c.state);
  setText('#cluster-view', 'as node ' + c.node_id + ' sees it');
  setText('#c-mode', c.mode + (c.epoch ? ' · epoch ' + c.epoch : ''));
  setText('#c-node', c.node_id);
  setText('#c-state', c.state);
  const leaderID = c.leader ? c.leader.id : c.coordinator;
  setText('#c-leader', leaderID || 'none known');
  setText('#c-term', c.term);
  setText('#c-commit', c.commit_index);
  setText('#c-applied', c.applied_index);
  if (c.master_lease_remaining !== undefined) setText('#c-lease', formatMs(parseDuration(c.master_lease_remaining)));
  else setText('#c-lease', leaderNow ? 'none' : 'held by the leader');
  setText('#c-lease-failures', c.master_lease_failures);
  const rows = (c.members || []).map((m) => el('tr', {'data-member': m.id, class: m.leader ? 'leader' : null},
    cell('Member', el('strong', {}, m.id), m.id === c.node_id ? el('span', {class: 'muted'}, ' (this node)') : null),
    cell('Role', el('span', {class: 'badge ' + (m.leader ? 'lead' : 'follow')}, m.leader ? 'leader' : 'follower')),
    cell('Vote', m.voter ? 'voter' : 'non-voter'),
    cell('HTTP', m.http ? el('a', {href: m.http.replace(/\/$/, '') + '/ui/'}, m.http) : '–'),
    cell('Peer', m.peer || '–')));
  $('#members tbody').replaceChildren(...rows);
}

// sessionCount reads lockd_sessions from /metrics, the one place that
// counts every live session without listing them; null when the node
// serves no metrics.
let metricsServed = true;

async function sessionCount() {
  if (!metricsServed) return null;
  try {
    const m = (await api('/metrics', undefined, true)).match(/^lockd_sessions\s+(\S+)$/m);
    return m ? Number(m[1]) : null;
  } catch (e) {
    if (e.status === 404) metricsServed = false;
    return null;
  }
}

async function clusterLoop() {
  let failures = 0;
  for (;;) {
    try {
      renderCluster(await api('/v1/cluster'));
      const n = await sessionCount();
      if (n !== null) sessionsTotal = n;
      renderSessionsNote();
      failures = 0;
      report('cluster', null);
    } catch (e) {
      failures++;
      if (e.status === 401) askToken();
      report('cluster', e);
      await nap(backoff(failures, e.retryAfter));
      continue;
    }
    await nap(CLUSTER_EVERY);
  }
}

// --- lists ---------------------------------------------------------------

// List keeps one list (locks, elections or sessions) current: one page of
// it, read again each time a blocking query says the list changed.
class List {
  constructor(key, path, render) {
    this.key = key;
    this.path = path;
    this.render = render;
    this.section = document.getElementById(key);
    this.after = '';      // cursor of the page shown ('' = first page)
    this.gen = 0;         // bumped to stop the running loop
    this.ctrl = null;
    this.last = null;     // the last answer
    this.section.querySelector('[data-page=first]').addEventListener('click', () => this.page(''));
    this.section.querySelector('[data-page=next]').addEventListener('click', () => this.page(this.last && this.last.next));
  }

  page(after) {
    this.after = after || '';
    this.restart();
  }

  restart() {
    this.gen++;
    if (this.ctrl) this.ctrl.abort();
    this.loop(this.gen);
  }

  async loop(gen) {
    let index = null;
    let failures = 0;
    while (gen === this.gen) {
      const started = Date.now();
      const q = new URLSearchParams({limit: PAGE});
      if (this.after) q.set('after', this.after);
      if (index !== null) { q.set('index', index); q.set('wait', WAIT); }
      this.ctrl = new AbortController();
      try {
        const body = await api(this.path + '?' + q, this.ctrl.signal);
        if (gen !== this.gen) return;
        index = body.index;
        failures = 0;
        this.last = body;
        this.render(body, this);
        this.section.querySelector('.pager').hidden = !this.after && !body.next;
        this.section.querySelector('[data-page=next]').disabled = !body.next;
        this.section.querySelector('[data-page=first]').disabled = !this.after;
        report(this.key, null);
      } catch (e) {
        if (gen !== this.gen || e.name === 'AbortError') return;
        failures++;
        report(this.key, e);
        if (e.status === 401) { askToken(); return; } // restarted with the new token
        await sleep(backoff(failures, e.retryAfter));
        continue;
      }
      const gap = MIN_GAP - (Date.now() - started);
      if (gap > 0) await sleep(gap);
    }
  }

  // rows puts rows in the section's table, or says the page is empty.
  rows(rows, note) {
    this.section.querySelector('tbody').replaceChildren(...rows);
    this.section.querySelector('.empty').hidden = rows.length > 0;
    setText('#' + this.key + '-note', note);
  }
}

// pageNote says which part of a list a page shows.
function pageNote(list, n, what) {
  if (n === 1) what = what.replace(/s$/, '');
  const first = !list.after;
  if (first && !list.last.next) return n + ' ' + what;
  return (first ? 'first ' : '') + n + ' ' + what + (list.last.next ? ', more on the next page' : '');
}

const sessionNames = new Map(); // id -> name, from the sessions page shown

// holderView shows a session holding a lock or leading an election: the
// start of its id, its name when the sessions page shown has it, and the
// token unless noToken.
function holderView(h, noToken) {
  const name = sessionNames.get(h.session);
  return el('span', {class: 'holder', 'data-session': h.session, 'data-token': h.token,
    title: 'session ' + h.session + (name ? ' (' + name + ')' : '') +
      (h.acquired_at ? ', since ' + new Date(h.acquired_at).toLocaleString() : '')},
  el('code', {}, shortID(h.session)), name ? el('span', {class: 'muted'}, ' ' + name) : null,
  noToken ? null : [' · ', el('span', {class: 'token'}, '#' + h.token)]);
}

// freed remembers the locks this page saw held that have since left the
// list (a lock nobody holds or waits for is not kept), to show them as
// free for a while rather than have them silently vanish.
const freed = new Map(); // name -> {at, holders}
let heldBefore = new Map(); // name -> holders, from the previous answer

function renderLocks(body, list) {
  const now = Date.now();
  const listed = new Set(body.locks.map((l) => l.name));
  const inPage = (name) => name > list.after && (!body.next || name <= body.next);
  for (const [name, holders] of heldBefore) {
    if (!listed.has(name) && inPage(name)) freed.set(name, {at: now, holders});
  }
  heldBefore = new Map(body.locks.filter((l) => l.holders.length).map((l) => [l.name, l.holders]));
  for (const [name, f] of freed) {
    if (listed.has(name) || now - f.at > FREED_FOR || !inPage(name)) freed.delete(name);
  }
  const rows = body.locks.map((l) => {
    const free = l.holders.length === 0;
    let state = free ? [el('span', {class: 'badge free'}, 'free')] : l.holders.map((h) => holderView(h));
    if (l.delay_until) state = state.concat(' ', el('span', {class: 'badge delay', title: 'ungrantable until ' + l.delay_until}, 'lock-delay'));
    return el('tr', {'data-lock': l.name, 'data-state': free ? 'free' : 'held'},
      cell('Name', el('strong', {}, l.name)),
      cell('Mode', l.mode || '–'),
      cell('Holders', el('span', {class: 'holders'}, state)),
      cell('Waiters', el('span', {class: 'waiters', 'data-waiters': l.waiters.length,
        title: l.waiters.map((w) => shortID(w.session) + ' (' + w.mode + ')').join(', ') || null}, String(l.waiters.length))),
      cell('Index', l.modify_index));
  });
  for (const [name, f] of freed) {
    const last = f.holders.map((h) => shortID(h.session) + ' #' + h.token).join(', ');
    rows.push(el('tr', {'data-lock': name, 'data-state': 'free', class: 'freed'},
      cell('Name', el('strong', {}, name)),
      cell('Mode', '–'),
      cell('Holders', el('span', {class: 'badge free'}, 'free'), el('span', {class: 'muted'}, ' released ' + clock(new Date(f.at)) + ' (was ' + last + ')')),
      cell('Waiters', el('span', {class: 'waiters', 'data-waiters': 0}, '0')),
      cell('Index', '–')));
  }
  rows.sort((a, b) => (a.dataset.lock < b.dataset.lock ? -1 : 1));
  list.rows(rows, pageNote(list, body.locks.length, 'locks'));
}

function renderElections(body, list) {
  const rows = body.elections.map((e) => el('tr', {'data-election': e.name},
    cell('Name', el('strong', {}, e.name)),
    cell('Leader session', e.session ? holderView({session: e.session, token: e.token}, true) : el('span', {class: 'badge free'}, 'no leader')),
    cell('Value', e.value ? el('code', {class: 'value'}, e.value) : '–'),
    cell('Token', e.token || '–')));
  list.rows(rows, pageNote(list, body.elections.length, 'elections'));
}

let sessionsTotal = null;
let sessionsList = null;

function renderSessionsNote() {
  if (!sessionsList || !sessionsList.last) return;
  const n = sessionsList.last.sessions.length;
  const note = pageNote(sessionsList, n, 'shown');
  setText('#sessions-note', sessionsTotal === null ? note : sessionsTotal + ' live · ' + note);
  setText('#c-sessions', sessionsTotal === null ? (sessionsList.last.next ? n + '+' : n) : sessionsTotal);
}

function renderSessions(body, list) {
  sessionNames.clear();
  for (const s of body.sessions) if (s.name) sessionNames.set(s.id, s.name);
  const rows = body.sessions.map((s) => el('tr', {'data-session': s.id},
    cell('Session', el('code', {title: s.id}, shortID(s.id))),
    cell('Name', s.name || '–'),
    cell('TTL', s.ttl),
    cell('Lock delay', s.lock_delay),
    cell('Holds', [...(s.locks || []), ...(s.elections || []).map((e) => e + ' (election)')].join(', ') || '–')));
  list.rows(rows, '');
  renderSessionsNote();
  if (lists.locks.last) renderLocksAgain();
  if (lists.elections.last) renderElections(lists.elections.last, lists.elections);
}

// renderLocksAgain redraws the locks with the session names just learnt,
// without taking the answer as a new one (so nothing counts as freed).
function renderLocksAgain() {
  const saved = heldBefore;
  renderLocks(lists.locks.last, lists.locks);
  heldBefore = saved;
}

const lists = {};

function start() {
  setupToken();
  lists.locks = new List('locks', '/v1/locks', renderLocks);
  lists.elections = new List('elections', '/v1/elections', renderElections);
  lists.sessions = sessionsList = new List('sessions', '/v1/sessions', renderSessions);
  restartAll = () => {
    for (const l of Object.values(lists)) l.restart();
    wakeCluster();
  };
  restartAll();
  clusterLoop();
}

document.addEventListener('DOMContentLoaded', start);
