// lockd status page. It reads the node's JSON API and keeps itself current:
// the lists (locks, elections, sessions) through blocking queries
// (?index=N&wait=30s answer as soon as the list's index passes N), the
// cluster panel by asking this node every few seconds, since that answer is
// the node's own view and has no index to wait on.
//
// On top of reading, it is a small operator console: a filter by name
// prefix, a link to each lock, election and session (#lock/NAME,
// #election/NAME, #session/ID) that brings it into view and opens it, and
// destroying a session (DELETE /v1/sessions/ID, which the node's ACLs allow
// or refuse). Below the lists, the keys under a prefix (GET /v1/kv), read
// a page at a time (#keys?prefix=P).
'use strict';

const PAGE = 50;               // items per page of each list
const WAIT = '30s';            // how long one blocking query may wait
const SESSIONS_WAIT = '5s';    // ... on sessions, when they show time left (keepalives write no entry)
const CLUSTER_EVERY = 2000;    // ms between reads of /v1/cluster
const MIN_GAP = 500;           // ms at least between two reads of one list
const FREED_FOR = 120000;      // ms a lock that left the list stays shown as free
const FEW_WAITERS = 5;         // waiters shown in a row that is not opened
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

// api sends a request to path (GET unless opt.method) and returns the
// decoded JSON body (or the text when opt.text is set), throwing ApiError
// for any other status.
async function api(path, opt = {}) {
  const headers = {Accept: opt.text ? 'text/plain' : 'application/json'};
  if (token()) headers.Authorization = 'Bearer ' + token();
  const res = await fetch(path, {method: opt.method || 'GET', headers, signal: opt.signal, cache: 'no-store', credentials: 'omit'});
  if (res.ok) return opt.text ? res.text() : res.json();
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
  for (const c of children.flat(Infinity)) {
    if (c !== undefined && c !== null && c !== false) e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function $(sel) { return document.querySelector(sel); }

function setText(sel, v) { $(sel).textContent = v === undefined || v === null || v === '' ? '–' : String(v); }

// cell is a table cell with the column's name, which narrow screens show
// beside the value (style.css turns each row into a card).
function cell(label, ...children) { return el('td', {'data-label': label}, ...children); }

// shortID is the start of a session id; an id the node shortened already
// (another token's session: "0123abcd…") is shown as it is.
function shortID(id) { return id ? (id.endsWith('…') ? id : id.slice(0, 8)) : ''; }

// idView shows a session id: its start, kept on one line, or all of it
// (in an opened row), which may break anywhere.
function idView(id, full) { return el('code', {class: full ? 'id' : 'id short', title: id}, full ? id : shortID(id)); }

// nameText is a lock or election name that may wrap after each '/' (and,
// should one segment not fit a line, inside it).
function nameText(name) {
  return name.split('/').map((seg, i, all) => (i < all.length - 1 ? [seg + '/', el('wbr')] : seg));
}

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

// formatMs is a duration for people; a number and its unit never part
// at the end of a line.
function formatMs(ms) {
  if (ms === null) return '–';
  if (ms < 1000) return Math.round(ms) + '\u00a0ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + '\u00a0s';
  if (ms < 3600e3) return Math.floor(ms / 60000) + '\u00a0min ' + Math.floor((ms % 60000) / 1000) + '\u00a0s';
  return Math.floor(ms / 3600e3) + '\u00a0h ' + Math.floor((ms % 3600e3) / 60000) + '\u00a0min';
}

// formatAge is a time that ticks every second: whole seconds.
function formatAge(ms) { return ms < 60000 ? Math.max(0, Math.floor(ms / 1000)) + '\u00a0s' : formatMs(ms); }

function clock(d) { return d.toLocaleTimeString([], {hour12: false}); }

// stamped reports whether t is a time the leader stamped: older state may
// hold Go's zero time instead.
function stamped(t) { return !!t && !t.startsWith('0001-'); }

// since is a span that shows how long ago the wall time t (an RFC 3339
// string) was, and until one that counts down to it (done when it has
// passed); tick keeps both current every second.
function since(t, cls) {
  const at = Date.parse(t);
  return el('span', {class: cls, 'data-since': at, title: 'since ' + new Date(at).toLocaleString() + " (the leader's clock)"},
    formatAge(Date.now() - at));
}

function until(at, done, cls, title) {
  return el('span', {class: cls, 'data-until': at, 'data-done': done, title}, untilText(at, done));
}

function untilText(at, done) {
  const left = at - Date.now();
  return left > 0 ? formatAge(left + 999) + ' left' : done;
}

function tick() {
  const now = Date.now();
  for (const e of document.querySelectorAll('[data-since]')) e.textContent = formatAge(now - Number(e.dataset.since));
  for (const e of document.querySelectorAll('[data-until]')) e.textContent = untilText(Number(e.dataset.until), e.dataset.done);
}

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

// notice says something that happened (a session destroyed) for a while.
let noticeTimer = 0;

function notice(...children) {
  const box = $('#notice');
  box.replaceChildren(...children);
  box.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { box.hidden = true; }, 10000);
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

// --- filter and links ----------------------------------------------------

// The filter is a name prefix: locks and elections whose names start with
// it, sessions whose id or name does or that hold such a lock or election.
// It is kept in the address (?prefix=) so that a reload or a shared link
// keeps it.
let prefix = new URLSearchParams(location.search).get('prefix') || '';

function matches(name) { return !prefix || (name || '').startsWith(prefix); }

function sessionMatches(s) {
  return !prefix || matches(s.id) || matches(s.name) ||
    (s.locks || []).some(matches) || (s.elections || []).some(matches);
}

// lowerBound is a list cursor just below s: a page read after it starts
// with the first item at or above s. Names and ids are made of characters
// below '~', so every one below s sorts below the cursor too.
function lowerBound(s) {
  if (!s || new TextEncoder().encode(s).length > 255) return '';
  return s.slice(0, -1) + String.fromCharCode(s.charCodeAt(s.length - 1) - 1) + '~';
}

function setPrefix(p, fromInput) {
  prefix = p;
  if (!fromInput) $('#filter').value = p;
  const q = new URLSearchParams(location.search);
  if (p) q.set('prefix', p); else q.delete('prefix');
  const search = q.toString();
  history.replaceState(null, '', location.pathname + (search ? '?' + search : '') + location.hash);
  setText('#filter-note', p ? 'showing names that start with “' + p + '”' : '');
  $('#filter-note').hidden = !p;
  for (const l of Object.values(lists)) l.page('');
}

function setupFilter() {
  const input = $('#filter');
  input.value = prefix;
  let timer = 0;
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => { if (input.value !== prefix) setPrefix(input.value, true); }, 300);
  });
  setText('#filter-note', prefix ? 'showing names that start with “' + prefix + '”' : '');
  $('#filter-note').hidden = !prefix;
}

// target is the item the address's fragment names: {list, key}, or null.
// Its row is marked, brought into view and opened (every waiter, the
// whole session id).
let target = null;
let targetShown = false; // its row was brought into view already

const KINDS = {lock: 'locks', election: 'elections', session: 'sessions'};

function parseTarget() {
  let hash = location.hash.slice(1);
  try { hash = decodeURIComponent(hash); } catch (e) { /* not encoded: take it as it is */ }
  const m = hash.match(/^(lock|election|session)\/(.+)$/);
  return m ? {kind: m[1], list: KINDS[m[1]], key: m[2]} : null;
}

function link(kind, key) { return '#' + kind + '/' + encodeURI(key); }

function isTarget(list, key) { return target !== null && target.list === list && target.key === key; }

// goTarget follows the fragment: it opens the target's row where the
// list shows it, or reads the page of the list that starts with it. The
// target is shown whatever the filter.
function goTarget() {
  target = parseTarget();
  targetShown = false;
  for (const l of Object.values(lists)) l.renderAgain();
  if (!target) return;
  const l = lists[target.list];
  if (l.shows(target.key)) showTarget(l);
  else l.page(lowerBound(target.key.replace(/…$/, '')), true);
}

// showTarget brings the target's row into view, once.
function showTarget(list) {
  if (!target || target.list !== list.key || targetShown) return;
  const row = list.section.querySelector('tr.target');
  if (row) {
    targetShown = true;
    row.scrollIntoView({block: 'center'});
  }
}

// missing says that the target is not in the page read to find it.
function missing(list) {
  if (!target || target.list !== list.key || !list.seeking || list.shows(target.key)) return '';
  const what = {locks: 'lock', elections: 'election', sessions: 'session'}[list.key];
  const why = list.key === 'sessions' ? 'it has ended, or never existed'
    : 'nobody holds, waits for or delays it, or this token may not read it';
  return 'The ' + what + ' ' + target.key + ' is not in the list: ' + why + '.';
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
  setText('#c-version', c.version);
  if (c.master_lease_remaining !== undefined) setText('#c-lease', formatMs(parseDuration(c.master_lease_remaining)));
  else setText('#c-lease', leaderNow ? 'none' : 'held by the leader');
  setText('#c-lease-failures', c.master_lease_failures);
  const health = c.mode === 'raft' && leaderNow;
  const rows = (c.members || []).map((m) => {
    const self = m.id === c.node_id;
    let contact = '–';
    let applied = '–';
    let lag = null;
    if (health) {
      if (self) contact = el('span', {class: 'muted'}, 'this node');
      else if (m.last_contact) contact = formatMs(parseDuration(m.last_contact)) + ' ago';
      else contact = el('span', {class: 'badge bad', title: 'it has not confirmed it follows this leader since it took office'}, 'no contact');
      if (m.applied_index !== undefined) {
        lag = Math.max(0, c.applied_index - m.applied_index);
        applied = [String(m.applied_index), ' ', el('span', {class: lag ? 'lag behind' : 'lag muted'}, '(' + (lag ? '−' + lag : 'up to date') + ')')];
      }
    }
    return el('tr', {'data-member': m.id, 'data-lag': lag === null ? null : lag, class: m.leader ? 'leader' : null},
      cell('Member', el('strong', {}, m.id), self ? el('span', {class: 'muted'}, ' (this node)') : null),
      cell('Role', el('span', {class: 'badge ' + (m.leader ? 'lead' : 'follow')}, m.leader ? 'leader' : 'follower')),
      cell('Vote', m.voter ? 'voter' : 'non-voter'),
      cell('Last contact', el('span', {class: 'contact'}, contact)),
      cell('Applied (lag)', el('span', {class: 'applied'}, applied)),
      cell('HTTP', m.http ? el('a', {class: 'id', href: m.http.replace(/\/$/, '') + '/ui/'}, m.http) : '–'),
      cell('Peer', m.peer ? el('span', {class: 'id'}, m.peer) : '–'));
  });
  $('#members tbody').replaceChildren(...rows);
  const note = $('#health-note');
  note.hidden = health || c.mode !== 'raft';
  if (!health) {
    const l = c.leader && c.leader.http ? el('a', {href: c.leader.http.replace(/\/$/, '') + '/ui/'}, c.leader.id + "'s page") : 'the leader’s page';
    note.replaceChildren('Last contact and applied index are known to the leader only: open ', l, '.');
  }
}

// sessionCount reads lockd_sessions from /metrics, the one place that
// counts every live session without listing them; null when the node
// serves no metrics.
let metricsServed = true;

async function sessionCount() {
  if (!metricsServed) return null;
  try {
    const m = (await api('/metrics', {text: true})).match(/^lockd_sessions\s+(\S+)$/m);
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
  constructor(key, path, items, id, render) {
    this.key = key;
    this.path = path;
    this.items = items;   // body => the page's items
    this.id = id;         // item => its name or id
    this.render = render;
    this.section = document.getElementById(key);
    this.after = '';      // cursor of the page shown ('' = first page)
    this.seeking = false; // the page was read to find the target
    this.gen = 0;         // bumped to stop the running loop
    this.ctrl = null;
    this.last = null;     // the last answer
    this.section.querySelector('[data-page=first]').addEventListener('click', () => this.page(''));
    this.section.querySelector('[data-page=next]').addEventListener('click', () => this.page(this.next()));
  }

  // start is the cursor of the first page: just below the filter's prefix
  // for names (sessions are sorted by id, and filtered on the page).
  start() { return this.key === 'sessions' ? '' : lowerBound(prefix); }

  // next is the cursor of the next page, or '' when no later item can
  // match the filter (names are sorted: past the prefix, none will).
  next() {
    const b = this.last;
    if (!b || !b.next) return '';
    if (this.key !== 'sessions' && prefix && !b.next.startsWith(prefix)) return '';
    return b.next;
  }

  page(after, seeking) {
    this.after = after || this.start();
    this.seeking = !!seeking;
    this.restart();
  }

  restart() {
    this.gen++;
    if (this.ctrl) this.ctrl.abort();
    this.loop(this.gen);
  }

  shows(key) { return !!this.last && this.items(this.last).some((x) => this.id(x) === key); }

  renderAgain() { if (this.last) this.render(this.last, this); }

  async loop(gen) {
    let index = null;
    let failures = 0;
    while (gen === this.gen) {
      const started = Date.now();
      const q = new URLSearchParams({limit: PAGE});
      if (this.after) q.set('after', this.after);
      if (index !== null) { q.set('index', index); q.set('wait', this.wait ? this.wait() : WAIT); }
      this.ctrl = new AbortController();
      let body;
      try {
        body = await api(this.path + '?' + q, {signal: this.ctrl.signal});
      } catch (e) {
        if (gen !== this.gen || e.name === 'AbortError') return;
        failures++;
        report(this.key, e);
        if (e.status === 401) { askToken(); return; } // restarted with the new token
        await sleep(backoff(failures, e.retryAfter));
        continue;
      }
      if (gen !== this.gen) return;
      index = body.index;
      failures = 0;
      this.last = body;
      try {
        this.render(body, this);
        const first = this.after === this.start();
        this.section.querySelector('.pager').hidden = first && !this.next();
        this.section.querySelector('[data-page=next]').disabled = !this.next();
        this.section.querySelector('[data-page=first]').disabled = first;
        report(this.key, null);
        showTarget(this);
      } catch (e) {
        // A bug of this page, not an answer of the node: say so where
        // the browser's console (and the page's test) will see it.
        console.error('lockd status page: showing ' + this.key + ' failed:', e);
        report(this.key, e);
      }
      const gap = MIN_GAP - (Date.now() - started);
      if (gap > 0) await sleep(gap);
    }
  }

  // rows puts rows in the section's table, or says the page is empty.
  rows(rows, note) {
    for (const r of rows) r.classList.toggle('target', isTarget(this.key, r.dataset[this.key.slice(0, -1)]));
    this.section.querySelector('tbody').replaceChildren(...rows);
    const empty = this.section.querySelector('.empty');
    const gone = missing(this);
    empty.hidden = rows.length > 0 && !gone;
    empty.textContent = gone || (prefix ? 'No ' + this.key + ' match the filter here.' : 'No ' + this.key + '.');
    if (note !== undefined) setText('#' + this.key + '-note', note);
  }
}

// pageNote says which part of a list a page shows (named: of the names
// that start with the filter's prefix).
function pageNote(list, n, what, named) {
  if (n === 1) what = what.replace(/s$/, '');
  const first = list.after === list.start();
  const more = !!list.next();
  if (prefix && named) what += ' named ' + prefix + '…';
  if (first && !more) return n + ' ' + what;
  return (first ? 'first ' : '') + n + ' ' + what + (more ? ', more on the next page' : '');
}

const sessionNames = new Map(); // id -> name, from the sessions page shown

// holderView shows a session holding a lock or leading an election: the
// start of its id, its name when the sessions page shown has it, linked to
// the session; the token unless noToken; and how long it has held.
function holderView(h, noToken) {
  const name = sessionNames.get(h.session);
  return el('span', {class: 'holder', 'data-session': h.session, 'data-token': h.token},
    el('a', {class: 'who', href: link('session', h.session), title: 'session ' + h.session + (name ? ' (' + name + ')' : '')},
      el('code', {class: 'id short'}, shortID(h.session)), name ? el('span', {class: 'sname'}, ' ' + name) : null),
    noToken ? null : [' · ', el('span', {class: 'token'}, '#' + h.token)],
    stamped(h.acquired_at) ? [' · ', since(h.acquired_at, 'held')] : null);
}

// waitersView lists a queue: position, session (linked), mode, and the
// time left of each wait; an opened row shows all of it, others the first
// few.
function waitersView(waiters, open, more) {
  if (!waiters || !waiters.length) return el('span', {class: 'waiters none muted', 'data-waiters': 0}, '–');
  const shown = open ? waiters : waiters.slice(0, FEW_WAITERS);
  return el('ol', {class: 'waiters', 'data-waiters': waiters.length},
    shown.map((w, i) => {
      const name = sessionNames.get(w.session);
      return el('li', {class: 'waiter', 'data-pos': i + 1, 'data-session': w.session, 'data-mode': w.mode},
        el('span', {class: 'pos'}, (i + 1) + '.'), ' ',
        el('a', {class: 'who', href: link('session', w.session), title: 'session ' + w.session},
          el('code', {class: 'id short'}, shortID(w.session)), name ? el('span', {class: 'sname'}, ' ' + name) : null),
        ' ', el('span', {class: 'mode badge ' + w.mode}, w.mode),
        stamped(w.deadline) ? [' ', el('span', {class: 'muted small', title: 'its wait ends at ' + new Date(w.deadline).toLocaleString() + " (the leader's clock)"},
          'wait ', until(Date.parse(w.deadline), 'ending', 'left'))] : null);
    }),
    shown.length < waiters.length ? el('li', {class: 'more'}, el('a', {href: more}, '+' + (waiters.length - shown.length) + ' more')) : null);
}

// delayView shows a lock-delay: its end and the time left.
function delayView(t) {
  const at = Date.parse(t);
  return el('span', {class: 'delay'}, el('span', {class: 'badge delay', title: 'ungrantable until ' + new Date(at).toLocaleString() + " (the leader's clock)"}, 'lock-delay'),
    ' until ' + clock(new Date(at)) + ' ', until(at, 'ending', 'muted small'));
}

function nameView(kind, name) {
  return el('a', {class: 'name', href: link(kind, name)}, el('strong', {}, nameText(name)));
}

// freed remembers the locks this page saw held that have since left the
// list (a lock nobody holds or waits for is not kept), to show them as
// free for a while rather than have them silently vanish.
const freed = new Map(); // name -> {at, holders}
let heldBefore = new Map(); // name -> holders, from the previous answer

function renderLocks(body, list, again) {
  const now = Date.now();
  const listed = new Set(body.locks.map((l) => l.name));
  const inPage = (name) => name > list.after && (!body.next || name <= body.next);
  if (!again) {
    for (const [name, holders] of heldBefore) {
      if (!listed.has(name) && inPage(name)) freed.set(name, {at: now, holders});
    }
    heldBefore = new Map(body.locks.filter((l) => l.holders.length).map((l) => [l.name, l.holders]));
  }
  for (const [name, f] of freed) {
    if (listed.has(name) || now - f.at > FREED_FOR || !inPage(name)) freed.delete(name);
  }
  const locks = body.locks.filter((l) => matches(l.name) || isTarget('locks', l.name));
  const rows = locks.map((l) => {
    const free = l.holders.length === 0;
    let state = free ? [el('span', {class: 'badge free'}, 'free')] : l.holders.map((h) => holderView(h));
    if (l.delay_until) state = state.concat(' ', delayView(l.delay_until));
    return el('tr', {'data-lock': l.name, 'data-state': free ? 'free' : 'held'},
      cell('Name', nameView('lock', l.name)),
      cell('Mode', l.mode || '–'),
      cell('Holders', el('span', {class: 'holders'}, state)),
      cell('Waiters', waitersView(l.waiters, isTarget('locks', l.name), link('lock', l.name))),
      cell('Index', l.modify_index));
  });
  for (const [name, f] of freed) {
    if (!matches(name)) continue;
    const last = f.holders.map((h) => shortID(h.session) + ' #' + h.token).join(', ');
    rows.push(el('tr', {'data-lock': name, 'data-state': 'free', class: 'freed'},
      cell('Name', nameView('lock', name)),
      cell('Mode', '–'),
      cell('Holders', el('span', {class: 'badge free'}, 'free'), el('span', {class: 'muted'}, ' released ' + clock(new Date(f.at)) + ' (was ' + last + ')')),
      cell('Waiters', el('span', {class: 'waiters none muted', 'data-waiters': 0}, '–')),
      cell('Index', '–')));
  }
  rows.sort((a, b) => (a.dataset.lock < b.dataset.lock ? -1 : 1));
  list.rows(rows, pageNote(list, locks.length, 'locks', true));
}

function renderElections(body, list) {
  const elections = body.elections.filter((e) => matches(e.name) || isTarget('elections', e.name));
  const rows = elections.map((e) => {
    let leader = e.session ? holderView({session: e.session, token: e.token, acquired_at: e.acquired_at}, true)
      : el('span', {class: 'badge free'}, 'no leader');
    if (e.delay_until) leader = [leader, ' ', delayView(e.delay_until)];
    return el('tr', {'data-election': e.name},
      cell('Name', nameView('election', e.name)),
      cell('Leader session', leader),
      cell('Value', e.value ? el('code', {class: 'value id'}, e.value) : '–'),
      cell('Token', e.token || '–'),
      cell('Waiters', waitersView(e.waiters, isTarget('elections', e.name), link('election', e.name))));
  });
  list.rows(rows, pageNote(list, elections.length, 'elections', true));
}

let sessionsTotal = null;
let sessionsList = null;

function renderSessionsNote() {
  if (!sessionsList || !sessionsList.last) return;
  const n = sessionsList.last.sessions.length;
  let note = pageNote(sessionsList, n, 'shown');
  if (prefix) note += ', ' + sessionsList.last.sessions.filter(sessionMatches).length + ' match the filter';
  setText('#sessions-note', sessionsTotal === null ? note : sessionsTotal + ' live · ' + note);
  setText('#c-sessions', sessionsTotal === null ? (sessionsList.last.next ? n + '+' : n) : sessionsTotal);
}

// timeLeft shows what the API says of a session's time left, when it says
// it (ttl_remaining, renewed_at: the leader's answers only); otherwise a
// dash, since the TTL is only the most a session lives unrenewed.
function timeLeft(s, readAt) {
  const left = parseDuration(s.ttl_remaining);
  const renewed = s.renewed_at ? ['renewed ', since(s.renewed_at, 'renewed'), ' ago'] : null;
  if (left === null) {
    return renewed ? el('span', {class: 'muted small'}, renewed)
      : el('span', {class: 'muted', title: 'this node does not report time left (only the leader sees keepalives); a session lives at most its TTL without one'}, '–');
  }
  return [until(readAt + left, 'expiring', 'left'), renewed ? [el('br'), el('span', {class: 'muted small'}, renewed)] : null];
}

function renderSessions(body, list) {
  sessionNames.clear();
  for (const s of body.sessions) if (s.name) sessionNames.set(s.id, s.name);
  const readAt = body.readAt || (body.readAt = Date.now());
  const rows = body.sessions.filter((s) => sessionMatches(s) || isTarget('sessions', s.id)).map((s) => {
    const open = isTarget('sessions', s.id);
    const holds = [...(s.locks || []).map((n) => ['lock', n]), ...(s.elections || []).map((n) => ['election', n])];
    const own = !s.id.endsWith('…');
    return el('tr', {'data-session': s.id},
      cell('Session', el('a', {href: link('session', s.id)}, idView(s.id, open))),
      cell('Name', s.name ? el('span', {class: 'sname'}, s.name) : '–'),
      cell('TTL', s.ttl),
      cell('Time left', timeLeft(s, readAt)),
      cell('Lock delay', s.lock_delay),
      cell('Holds', holds.length ? el('span', {class: 'holds'}, holds.map(([k, n], i) => [i ? ', ' : '',
        el('a', {href: link(k, n), class: 'name'}, nameText(n)), k === 'election' ? el('span', {class: 'muted'}, ' (election)') : null])) : '–'),
      cell('Actions', own ? el('button', {type: 'button', class: 'destroy danger', 'data-session': s.id}, 'Destroy…')
        : el('span', {class: 'muted small', title: 'the node shortened this id: the session belongs to another token'}, 'another token’s')));
  });
  list.rows(rows);
  renderSessionsNote();
  if (lists.locks.last) renderLocks(lists.locks.last, lists.locks, true);
  if (lists.elections.last) renderElections(lists.elections.last, lists.elections);
  if (keysView.index !== null) renderKeys();
}

// --- destroying a session ------------------------------------------------

let destroying = null; // the session the dialog asks about

function askDestroy(id) {
  const s = sessionsList.last && sessionsList.last.sessions.find((x) => x.id === id);
  if (!s) return;
  destroying = s;
  $('#destroy-id').textContent = s.id;
  setText('#destroy-name', s.name ? '(' + s.name + ')' : '');
  const holds = [...(s.locks || []), ...(s.elections || []).map((e) => e + ' (election)')];
  setText('#destroy-holds', holds.length ? 'It holds ' + holds.join(', ') + '.' : 'It holds nothing.');
  $('#destroy-error').hidden = true;
  $('#destroy-confirm').disabled = false;
  $('#destroy-dialog').showModal();
}

async function destroy() {
  const s = destroying;
  if (!s) return;
  $('#destroy-confirm').disabled = true;
  try {
    await api('/v1/sessions/' + encodeURIComponent(s.id), {method: 'DELETE'});
  } catch (e) {
    const box = $('#destroy-error');
    box.textContent = 'Refused: ' + e.message + (e.code ? ' (' + e.code + ')' : '');
    box.hidden = false;
    $('#destroy-confirm').disabled = false;
    if (e.status === 401) askToken();
    return;
  }
  destroying = null;
  $('#destroy-dialog').close();
  notice('Session ', el('code', {class: 'id'}, s.id), s.name ? ' (' + s.name + ')' : '', ' destroyed.');
}

function setupDestroy() {
  $('#sessions').addEventListener('click', (ev) => {
    const b = ev.target.closest('button.destroy');
    if (b) askDestroy(b.dataset.session);
  });
  $('#destroy-confirm').addEventListener('click', destroy);
  $('#destroy-cancel').addEventListener('click', () => { destroying = null; $('#destroy-dialog').close(); });
  $('#destroy-dialog').addEventListener('close', () => { destroying = null; });
}

// --- keys ----------------------------------------------------------------

// The keys view lists the keys that start with a prefix (GET
// /v1/kv?prefix=P), a page at a time: More reads the page after the last
// key shown and adds it. It is read when the page opens, the prefix
// changes or Refresh is pressed, not kept current: values may be large,
// and a list grown by More has no one index to wait on. Its prefix is kept
// in the address as #keys?prefix=P.
const VALUE_TEXT = 200;    // characters of a value shown whole as text at most
const VALUE_PREVIEW = 16;  // bytes of a binary value shown in hex

const keysView = {prefix: '', kvs: [], next: '', index: null, readAt: null, gen: 0};

// keysPrefixFromHash is the prefix of a #keys link, or null for another
// fragment.
function keysPrefixFromHash() {
  const m = location.hash.match(/^#keys(?:\?(.*))?$/);
  if (!m) return null;
  return new URLSearchParams(m[1] || '').get('prefix') || '';
}

function keysLink(p) { return '#keys' + (p ? '?prefix=' + encodeURIComponent(p).replace(/%2F/g, '/') : ''); }

// valueBytes decodes a value as the JSON API gives it (base64).
function valueBytes(b64) {
  const s = b64 ? atob(b64) : '';
  const b = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
  return b;
}

// valueView shows a value: as text when it is UTF-8 without control
// characters (but for tab and newline), whole when short, else its size
// and its start; other bytes as their size and the first few in hex.
// Always inserted as text, never as HTML.
function valueView(b64) {
  const bytes = valueBytes(b64);
  if (!bytes.length) return el('span', {class: 'kvalue muted', 'data-kind': 'empty', 'data-size': 0}, 'empty');
  let text = null;
  try { text = new TextDecoder('utf-8', {fatal: true, ignoreBOM: true}).decode(bytes); } catch (e) { /* not UTF-8 */ }
  if (text !== null && /[\u0000-\u0008\u000b-\u001f\u007f]/.test(text)) text = null;
  const size = bytes.length + '\u00a0' + (bytes.length === 1 ? 'byte' : 'bytes');
  if (text !== null && text.length <= VALUE_TEXT) {
    return el('code', {class: 'kvalue', 'data-kind': 'text', 'data-size': bytes.length, title: size}, text);
  }
  if (text !== null) {
    return el('span', {class: 'kvalue', 'data-kind': 'long', 'data-size': bytes.length},
      el('span', {class: 'muted small'}, size + ' · '), el('code', {class: 'preview'}, text.slice(0, VALUE_TEXT) + '…'));
  }
  const hex = [...bytes.subarray(0, VALUE_PREVIEW)].map((x) => x.toString(16).padStart(2, '0')).join(' ');
  return el('span', {class: 'kvalue', 'data-kind': 'bytes', 'data-size': bytes.length, title: 'not UTF-8 text: the first bytes in hex'},
    el('span', {class: 'muted small'}, size + ' · '), el('code', {class: 'preview hex'}, hex + (bytes.length > VALUE_PREVIEW ? ' …' : '')));
}

function keyRow(kv) {
  const name = kv.session ? sessionNames.get(kv.session) : null;
  return el('tr', {'data-key': kv.key},
    cell('Key', el('strong', {class: 'name'}, nameText(kv.key))),
    cell('Value', valueView(kv.value)),
    cell('Created', el('span', {class: 'create'}, kv.create_index)),
    cell('Modified', el('span', {class: 'modify'}, kv.modify_index)),
    cell('Version', el('span', {class: 'version'}, kv.version)),
    cell('Flags', el('span', {class: 'flags'}, kv.flags || 0)),
    cell('Session', kv.session
      ? el('a', {class: 'who', href: link('session', kv.session), 'data-session': kv.session, title: 'ephemeral: owned by session ' + kv.session + (name ? ' (' + name + ')' : '')},
        el('code', {class: 'id short'}, shortID(kv.session)), name ? el('span', {class: 'sname'}, ' ' + name) : null)
      : el('span', {class: 'muted'}, '–')));
}

function renderKeys() {
  const v = keysView;
  const section = $('#keys');
  const rows = v.kvs.map(keyRow);
  section.querySelector('tbody').replaceChildren(...rows);
  const empty = section.querySelector('.empty');
  empty.hidden = rows.length > 0 || v.index === null;
  empty.textContent = v.prefix ? 'No keys start with “' + v.prefix + '”.' : 'No keys.';
  section.querySelector('.pager').hidden = !v.next;
  if (v.index === null) return;
  const n = rows.length;
  setText('#keys-note', n + ' ' + (n === 1 ? 'key' : 'keys') + (v.prefix ? ' under ' + v.prefix : '') +
    (v.next ? ', more after' : '') + ' · read ' + clock(v.readAt) + ' at index ' + v.index);
}

// readKeys reads the first page of keys under the prefix, or with more
// the page after the last key shown, which it adds.
async function readKeys(more) {
  const v = keysView;
  const gen = ++v.gen;
  const q = new URLSearchParams({limit: PAGE});
  if (v.prefix) q.set('prefix', v.prefix);
  if (more && v.next) q.set('after', v.next);
  $('#keys-more').disabled = true;
  let body;
  try {
    body = await api('/v1/kv?' + q);
  } catch (e) {
    if (gen !== v.gen) return;
    report('keys', e);
    $('#keys-more').disabled = false;
    if (e.status === 401) askToken();
    return;
  }
  if (gen !== v.gen) return;
  const kvs = body.kvs || [];
  v.kvs = more ? v.kvs.concat(kvs) : kvs;
  v.next = body.next && body.next.startsWith(v.prefix) ? body.next : '';
  v.index = body.index;
  v.readAt = new Date();
  $('#keys-more').disabled = false;
  report('keys', null);
  try {
    renderKeys();
  } catch (e) {
    console.error('lockd status page: showing keys failed:', e);
    report('keys', e);
  }
}

// setKeysPrefix shows the keys under p; fromInput: as typed, which the
// address then keeps.
function setKeysPrefix(p, fromInput) {
  keysView.prefix = p;
  if (!fromInput) $('#keys-prefix').value = p;
  else history.replaceState(null, '', location.pathname + location.search + keysLink(p));
  keysView.kvs = [];
  keysView.next = '';
  readKeys(false);
}

// keysFromHash follows a #keys link: its prefix, and the view brought
// into view.
function keysFromHash() {
  const p = keysPrefixFromHash();
  if (p === null) return;
  if (p !== keysView.prefix || keysView.index === null) setKeysPrefix(p, false);
  $('#keys').scrollIntoView({block: 'start'});
}

function setupKeys() {
  const input = $('#keys-prefix');
  const p = keysPrefixFromHash();
  keysView.prefix = p || '';
  input.value = keysView.prefix;
  let timer = 0;
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => { if (input.value !== keysView.prefix) setKeysPrefix(input.value, true); }, 300);
  });
  $('#keys-refresh').addEventListener('click', () => readKeys(false));
  $('#keys-more').addEventListener('click', () => readKeys(true));
  if (p !== null) $('#keys').scrollIntoView({block: 'start'});
}

const lists = {};

function start() {
  setupToken();
  setupFilter();
  setupDestroy();
  setupKeys();
  lists.locks = new List('locks', '/v1/locks', (b) => b.locks, (l) => l.name, renderLocks);
  lists.elections = new List('elections', '/v1/elections', (b) => b.elections, (e) => e.name, renderElections);
  lists.sessions = sessionsList = new List('sessions', '/v1/sessions', (b) => b.sessions, (s) => s.id, renderSessions);
  // Keepalives write no entry, so a blocking query on the sessions would
  // not see time left change: with it shown, they are read more often.
  sessionsList.wait = () => (sessionsList.last && sessionsList.last.sessions.some((s) => s.ttl_remaining) ? SESSIONS_WAIT : WAIT);
  restartAll = () => {
    for (const l of Object.values(lists)) l.restart();
    readKeys(false);
    wakeCluster();
  };
  for (const l of Object.values(lists)) l.after = l.start();
  restartAll();
  clusterLoop();
  window.addEventListener('hashchange', () => { goTarget(); keysFromHash(); });
  goTarget();
  setInterval(tick, 1000);
}

document.addEventListener('DOMContentLoaded', start);
