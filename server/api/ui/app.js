// SPDX-License-Identifier: GPL-2.0-or-later
// vnibroker status page: reads GET /v1/status and GET /v1/events with the
// token pasted into this tab, and shows them; its search box looks up one
// job (GET /v1/reservations/{job_id}, .../nodes, its events) or one node
// (GET /v1/nodes/{node}, its events).  No framework and no
// innerHTML: every figure and cell is set with textContent, so job ids,
// node names and event details from the broker are shown as text, never
// parsed as markup.  The page's Content-Security-Policy forbids inline
// script and style, so all behaviour is here and all style in app.css.
'use strict';

(function () {
  const TOKEN_KEY = 'vnibroker.token';
  const REFRESH_MS = 5000;
  const FETCH_TIMEOUT_MS = 10000;
  const STALE_MS = 3 * REFRESH_MS;
  const EVENTS_LIMIT = 100;
  const MAX_ROWS = 1000; // per table and refresh, whatever the API sends
  const SEARCH_EVENTS = 50; // events shown for a job or node found
  const SEARCH_REPORTS = 200; // node reports shown for a job found

  const $ = (id) => document.getElementById(id);

  const ui = {
    status: null,      // last GET /v1/status reply
    events: null,      // last GET /v1/events reply
    fetchedAt: 0,      // Date.now() when status arrived
    lastOk: 0,         // Date.now() of the last refresh without error
    error: null,       // last refresh's error, or null
    refused: false,    // the token was refused: no refresh until a new one
    inFlight: false,
    again: false,      // a refresh was asked for while one ran
    timer: 0,
    refreshes: 0,      // completed refreshes (the browser test waits on it)
    renderMs: 0,       // the last refresh's render time
    filters: { action: '', node: '', job_id: '' },
    searchSeq: 0,      // the newest search asked for; older answers are dropped
    searches: 0,       // completed searches (the browser test waits on it)
  };

  // ---- token ---------------------------------------------------------------

  // A #token=... fragment (tests, `make demo`) goes into sessionStorage
  // and out of the address bar; the fragment never reaches the server.
  function takeFragmentToken() {
    if (!location.hash || location.hash.length < 2) return;
    const params = new URLSearchParams(location.hash.slice(1));
    if (!params.has('token')) return;
    const t = params.get('token').trim();
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    params.delete('token');
    const rest = params.toString();
    history.replaceState(null, '', location.pathname + location.search + (rest ? '#' + rest : ''));
  }

  // #find=... (a link to a job or node) fills the search box at start.
  function fragmentFind() {
    if (!location.hash || location.hash.length < 2) return '';
    return (new URLSearchParams(location.hash.slice(1)).get('find') || '').trim();
  }

  function setFragmentFind(q) {
    const params = new URLSearchParams(location.hash.slice(1));
    if (q) params.set('find', q); else params.delete('find');
    const rest = params.toString();
    history.replaceState(null, '', location.pathname + location.search + (rest ? '#' + rest : ''));
  }

  function token() {
    return sessionStorage.getItem(TOKEN_KEY) || '';
  }

  function showTokenState() {
    $('token-input').placeholder = token() ? 'token in use (this tab only)' : 'paste a monitor token';
  }

  // ---- formatting ----------------------------------------------------------

  function pad(n) {
    return n < 10 ? '0' + n : String(n);
  }

  function fmtTime(iso) {
    if (!iso) return '\u2013';
    const d = new Date(iso);
    if (isNaN(d.getTime())) return String(iso);
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' +
      pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }

  function fmtClock(ms) {
    const d = new Date(ms);
    return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }

  function fmtAge(seconds) {
    if (seconds === null || seconds === undefined || !isFinite(seconds)) return '\u2013';
    let s = Math.max(0, Math.round(seconds));
    if (s < 60) return s + ' s';
    const d = Math.floor(s / 86400); s -= d * 86400;
    const h = Math.floor(s / 3600); s -= h * 3600;
    const m = Math.floor(s / 60); s -= m * 60;
    if (d) return d + ' d ' + h + ' h';
    if (h) return h + ' h ' + m + ' min';
    return m + ' min ' + s + ' s';
  }

  // The server's clock now, so that ages do not depend on this machine's.
  function serverNow() {
    const t = ui.status ? Date.parse(ui.status.time) : NaN;
    return isNaN(t) ? Date.now() : t + (Date.now() - ui.fetchedAt);
  }

  function ageOf(iso) {
    const t = Date.parse(iso || '');
    return isNaN(t) ? null : (serverNow() - t) / 1000;
  }

  function fmtCompact(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(n % 1e6 ? 1 : 0) + 'M';
    if (n >= 1e4) return Math.round(n / 1e3) + 'k';
    if (n >= 1e3) return (n / 1e3).toFixed(n % 1e3 ? 1 : 0) + 'k';
    return String(n);
  }

  function plain(n) {
    return n === null || n === undefined ? '\u2013' : String(n);
  }

  // An age ("3 min 10 s ago") with the time itself as the tooltip.
  function setAgo(id, iso, none) {
    setText(id, iso ? fmtAge(ageOf(iso)) + ' ago' : none);
    $(id).title = iso ? fmtTime(iso) + ' (' + iso + ')' : '';
  }

  function setText(id, text) {
    const el = $(id);
    if (el.textContent !== text) el.textContent = text;
  }

  // ---- DOM building (createElement and textContent only) --------------------

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // Replace a table's tbody wholesale with rows built by makeRow(item),
  // at most MAX_ROWS of them; `empty`, if not null, is the text of a row
  // shown when there is none.
  function fillTable(tableId, items, makeRow, empty) {
    const table = $(tableId);
    const ncols = table.tHead.rows[0].cells.length;
    const body = document.createElement('tbody');
    const list = (items || []).slice(0, MAX_ROWS);
    for (const item of list) body.appendChild(makeRow(item));
    if (!list.length && empty !== null) {
      const tr = el('tr');
      const td = el('td', 'empty', empty);
      td.colSpan = ncols;
      tr.appendChild(td);
      body.appendChild(tr);
    }
    table.replaceChild(body, table.tBodies[0]);
  }

  // "Showing the 50 oldest of 120." under a table the API capped.
  function moreNote(id, items, total, which) {
    const shown = Math.min(items.length, MAX_ROWS);
    setText(id, total > shown ? 'Showing the ' + shown + ' ' + which + ' of ' + total + '.' : '');
  }

  function cell(tr, cls, text, title) {
    const td = el('td', cls, text);
    if (title) td.title = title;
    tr.appendChild(td);
    return td;
  }

  function timeCell(tr, iso) {
    const td = el('td', 'time', fmtTime(iso));
    if (iso) {
      td.title = iso;
      td.appendChild(el('span', 'age', ' ' + fmtAge(ageOf(iso)) + ' ago'));
    }
    tr.appendChild(td);
  }

  function jobText(item) {
    let s = item.job_id === undefined || item.job_id === null ? '\u2013' : String(item.job_id);
    if (item.step_id !== undefined && item.step_id !== null) s += ' step ' + item.step_id;
    return s;
  }

  // ---- rendering -----------------------------------------------------------

  function renderPool(st) {
    const p = st.pool || {};
    setText('pool-free', plain(p.free));
    setText('pool-active', plain(p.active));
    setText('pool-quarantined', plain(p.quarantined));
    setText('pool-outside', plain(p.outside_pool));
    setText('pool-total', plain(p.total));
    setText('pool-ranges', p.ranges ? 'ranges ' + p.ranges : '');
  }

  function renderQuarantine(st) {
    const q = st.quarantine || {};
    setText('quarantine-count', plain(q.reservations));
    setText('quarantine-vnis', plain(q.vnis));
    setText('quarantine-oldest', q.oldest_since ? fmtAge(ageOf(q.oldest_since)) : 'none');
    const items = q.items || [];
    fillTable('quarantine-table', items, (it) => {
      const tr = el('tr');
      cell(tr, 'mono', jobText(it));
      cell(tr, 'num', plain(it.reservation_id));
      cell(tr, 'mono', (it.vnis || []).join(', '));
      timeCell(tr, it.since);
      const w = it.waiting || {};
      cell(tr, 'num', plain(w.count));
      cell(tr, 'hostlist', w.nodes || '\u2013');
      return tr;
    }, 'No reservation is quarantined.');
    moreNote('quarantine-more', items, q.reservations, 'oldest');
  }

  function renderDrained(st) {
    const d = st.drained || {};
    setText('drained-count', plain(d.count));
    setText('drained-nodes', d.nodes || '');
    const items = d.items || [];
    fillTable('drained-table', items, (it) => {
      const tr = el('tr');
      cell(tr, 'mono', it.node);
      cell(tr, '', it.reason === null || it.reason === undefined ? '\u2013' : it.reason);
      timeCell(tr, it.since);
      return tr;
    }, 'No node is drained.');
    moreNote('drained-more', items, d.count, 'most recently drained');
  }

  function renderFabric(st) {
    const fm = st.fabric_manager || {};
    const conn = fm.connection || (fm.configured === false ? 'disabled' : 'unknown');
    setText('fm-connection', conn);
    $('fm-connection').className = 'badge ' + conn;
    const queue = fm.queue || {};
    setText('fm-queue-depth', plain(queue.depth));
    setText('fm-queue-oldest', queue.depth ? fmtAge(queue.oldest_s) : 'empty');
    setAgo('fm-last-success', fm.last_success, 'never');
    const rec = fm.last_reconcile;
    if (rec && rec.at) {
      setAgo('fm-reconcile', rec.at, '');
      let s = 'released ' + plain(rec.released) + ', lost ' + plain(rec.lost) + ', foreign ' + plain(rec.foreign);
      if (rec.error) s += '; ' + rec.error;
      setText('fm-reconcile-counts', s);
    } else {
      setText('fm-reconcile', 'none here');
      setText('fm-reconcile-counts', '');
    }
    const leader = fm.leader && fm.leader.replica ? fm.leader.replica : 'none';
    setText('leader', leader);
    setAgo('fm-leader-since', fm.leader && fm.leader.since, '\u2013');
    setText('fm-leading', fm.leading ? 'yes' : 'no');
    const err = fm.last_error;
    setText('fm-last-error', err ? fmtTime(err.time) + ': ' + (err.message || '') : 'none');
  }

  function renderHeader(st) {
    setText('replica', plain(st.replica));
    setText('version', plain(st.version));
    const db = st.database || {};
    let s = db.up ? 'up' : 'down';
    if (db.figures_age_s !== null && db.figures_age_s !== undefined) s += ' (figures ' + fmtAge(db.figures_age_s) + ' old)';
    setText('database', s);
  }

  // One row of an events table: time, action, job, node, actor, detail.
  function eventRow(e) {
    const tr = el('tr');
    timeCell(tr, e.time);
    const td = el('td');
    td.appendChild(el('span', 'action ' + String(e.action).replace(/[^a-z_]/g, ''), e.action));
    tr.appendChild(td);
    cell(tr, 'mono', jobText(e));
    cell(tr, 'mono', e.node === null || e.node === undefined ? '\u2013' : e.node);
    cell(tr, '', plain(e.actor));
    let detail = e.detail === undefined || e.detail === null ? '' : JSON.stringify(e.detail);
    const full = detail.length > 2000 ? detail.slice(0, 2000) + '\u2026' : detail;
    if (detail.length > 160) detail = detail.slice(0, 160) + '\u2026';
    cell(tr, 'detail', detail, full !== detail ? full : '');
    return tr;
  }

  function renderEvents(ev) {
    const list = (ev && ev.events) || [];
    fillTable('events', list, eventRow, null); // the note says when there is none
    const f = ui.filters;
    const active = [f.action && 'action ' + f.action, f.node && 'node ' + f.node, f.job_id && 'job ' + f.job_id].filter(Boolean);
    setText('events-note', (active.length ? 'Filtered by ' + active.join(', ') + ': ' : '') +
      (list.length ? list.length + ' event' + (list.length === 1 ? '' : 's') : 'no event matches') +
      (ev && ev.next ? ' (more in the API)' : '') + '.');
  }

  // ---- the chart -------------------------------------------------------------

  const SERIES = [
    { key: 'active', color: '#2f6fb5' },
    { key: 'quarantined', color: '#e0932b' },
    { key: 'outside_pool', color: '#8e6bbf' },
    { key: 'free', color: '#9fc5a8' },
  ];

  function niceStep(range, count) {
    const raw = range / Math.max(1, count);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= raw) return Math.max(1, m * mag);
    return Math.max(1, 10 * mag);
  }

  function drawChart() {
    const canvas = $('pool-chart');
    const box = canvas.parentElement;
    const w = box.clientWidth;
    const h = box.clientHeight;
    if (!w || !h) return;
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
    }
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillStyle = '#5d6b7e';

    const hist = ui.status && ui.status.history;
    const samples = (hist && hist.samples) || [];
    const L = 62, R = 14, T = 12, B = 30;
    const pw = w - L - R, ph = h - T - B;
    if (!samples.length) {
      ctx.textAlign = 'center';
      ctx.fillText(ui.status ? 'No samples yet: the broker takes one every ' + ((hist && hist.interval_s) || 5) + ' s.' : 'Waiting for data.', w / 2, h / 2);
      $('chart-note').textContent = '';
      return;
    }
    const withFree = $('chart-free').checked;
    const series = SERIES.filter((s) => withFree || s.key !== 'free');
    const times = samples.map((s) => Date.parse(s.t));
    let t0 = times[0], t1 = times[times.length - 1];
    if (!(t1 > t0)) { t0 = t1 - ((hist.interval_s || 5) * 1000); }
    let ymax = 1;
    for (const s of samples) {
      let sum = 0;
      for (const se of series) sum += s[se.key] || 0;
      if (sum > ymax) ymax = sum;
    }
    const ystep = niceStep(ymax, Math.max(2, Math.floor(ph / 45)));
    ymax = Math.ceil(ymax / ystep) * ystep;
    const X = (t) => L + ((t - t0) / (t1 - t0)) * pw;
    const Y = (v) => T + ph - (v / ymax) * ph;

    // Grid and y axis.
    ctx.strokeStyle = '#e4e9ef';
    ctx.lineWidth = 1;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    for (let v = 0; v <= ymax + 1e-9; v += ystep) {
      const y = Math.round(Y(v)) + 0.5;
      ctx.beginPath(); ctx.moveTo(L, y); ctx.lineTo(L + pw, y); ctx.stroke();
      ctx.fillText(fmtCompact(v), L - 6, y);
    }
    ctx.save();
    ctx.translate(12, T + ph / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = 'center';
    ctx.fillText('VNIs', 0, 0);
    ctx.restore();

    // Stacked areas, bottom up.
    const base = new Float64Array(samples.length);
    const single = samples.length === 1;
    for (const se of series) {
      const top = new Float64Array(samples.length);
      for (let i = 0; i < samples.length; i++) top[i] = base[i] + (samples[i][se.key] || 0);
      ctx.beginPath();
      for (let i = 0; i < samples.length; i++) {
        const x = single ? L : X(times[i]);
        if (i === 0) ctx.moveTo(x, Y(top[i])); else ctx.lineTo(x, Y(top[i]));
      }
      if (single) ctx.lineTo(L + pw, Y(top[0]));
      if (single) ctx.lineTo(L + pw, Y(base[0]));
      for (let i = samples.length - 1; i >= 0; i--) ctx.lineTo(single ? L : X(times[i]), Y(base[i]));
      ctx.closePath();
      ctx.fillStyle = se.color;
      ctx.fill();
      base.set(top);
    }

    // Time axis: local clock times at a round step.
    const span = (t1 - t0) / 1000;
    const steps = [10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
    const maxTicks = Math.max(2, Math.floor(pw / 80));
    let step = steps[steps.length - 1];
    for (const s of steps) if (span / s <= maxTicks) { step = s; break; }
    ctx.fillStyle = '#5d6b7e';
    ctx.strokeStyle = '#9aa7b6';
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    const offset = new Date(t0).getTimezoneOffset() * 60000;
    let tick = Math.ceil((t0 - offset) / (step * 1000)) * step * 1000 + offset;
    for (; tick <= t1; tick += step * 1000) {
      const x = Math.round(X(tick)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, T + ph); ctx.lineTo(x, T + ph + 4); ctx.stroke();
      const d = new Date(tick);
      const label = pad(d.getHours()) + ':' + pad(d.getMinutes()) + (step < 60 ? ':' + pad(d.getSeconds()) : '');
      const half = ctx.measureText(label).width / 2;
      ctx.fillText(label, Math.min(Math.max(x, half), w - half), T + ph + 7);
    }
    ctx.beginPath();
    ctx.moveTo(L + 0.5, T); ctx.lineTo(L + 0.5, T + ph + 0.5); ctx.lineTo(L + pw, T + ph + 0.5);
    ctx.stroke();
    $('chart-note').textContent = samples.length + ' samples, one every ' + (hist.interval_s || 5) +
      ' s, over ' + fmtAge(span) + ' (local time; this replica\u2019s memory, since it started).';
  }

  let drawQueued = false;
  function queueDraw() {
    if (drawQueued) return;
    drawQueued = true;
    requestAnimationFrame(() => { drawQueued = false; drawChart(); });
  }

  // ---- status line -----------------------------------------------------------

  function updateStatusLine() {
    const line = $('status-line');
    let text, cls;
    if (!token()) {
      text = 'No token: paste a token (a monitor token suffices) to see the broker\u2019s state.';
      cls = '';
    } else if (ui.refused) {
      text = 'Token refused (HTTP ' + ui.error.status + ' ' + (ui.error.code || '') + '): ' + ui.error.message +
        '. Paste another token.';
      cls = 'error';
    } else if (ui.error) {
      text = 'Refresh failed: ' + ui.error.message + '.';
      if (ui.lastOk) text += ' Showing data from ' + fmtClock(ui.lastOk) + ' (' + fmtAge((Date.now() - ui.lastOk) / 1000) + ' old).';
      cls = 'error';
    } else if (ui.lastOk) {
      const age = Date.now() - ui.lastOk;
      text = 'Updated ' + fmtClock(ui.lastOk) + ' (' + fmtAge(age / 1000) + ' ago) from ' + plain(ui.status && ui.status.replica) +
        '; rendered in ' + ui.renderMs.toFixed(1) + ' ms.';
      if (document.visibilityState !== 'visible') text += ' Paused while the tab is hidden.';
      cls = age > STALE_MS && document.visibilityState === 'visible' ? 'stale' : 'ok';
    } else {
      text = 'Loading\u2026';
      cls = '';
    }
    if (line.textContent !== text) line.textContent = text;
    line.className = 'status-line ' + cls;
  }

  // ---- fetching --------------------------------------------------------------

  async function api(path) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), FETCH_TIMEOUT_MS);
    let r;
    try {
      r = await fetch(path, {
        headers: { Authorization: 'Bearer ' + token(), Accept: 'application/json' },
        cache: 'no-store',
        credentials: 'omit',
        signal: ctl.signal,
      });
    } catch (e) {
      const err = new Error(e.name === 'AbortError' ? 'no answer within ' + FETCH_TIMEOUT_MS / 1000 + ' s'
        : 'the broker is unreachable');
      err.status = 0;
      throw err;
    } finally {
      clearTimeout(timer);
    }
    let body = null;
    try { body = await r.json(); } catch (e) { body = null; }
    if (!r.ok) {
      const e = body && body.error ? body.error : {};
      const err = new Error((e.message || r.statusText || 'error') + ' (' + path.split('?')[0] + ')');
      err.status = r.status;
      err.code = e.code || '';
      throw err;
    }
    return body;
  }

  function eventsPath() {
    const q = new URLSearchParams({ order: 'desc', limit: String(EVENTS_LIMIT) });
    for (const k of ['action', 'node', 'job_id']) if (ui.filters[k]) q.set(k, ui.filters[k]);
    return '/v1/events?' + q.toString();
  }

  function schedule() {
    clearTimeout(ui.timer);
    ui.timer = 0;
    if (token() && !ui.refused && document.visibilityState === 'visible') ui.timer = setTimeout(refresh, REFRESH_MS);
  }

  // One refresh at a time: a refresh asked for while one runs (a filter
  // change) runs when it ends.
  async function refresh() {
    if (!token() || ui.refused) { updateStatusLine(); return; }
    if (ui.inFlight) { ui.again = true; return; }
    ui.inFlight = true;
    clearTimeout(ui.timer);
    const [st, ev] = await Promise.allSettled([api('/v1/status'), api(eventsPath())]);
    const t0 = performance.now();
    let error = null;
    if (st.status === 'fulfilled') {
      ui.status = st.value;
      ui.fetchedAt = Date.now();
      renderHeader(ui.status);
      renderPool(ui.status);
      renderQuarantine(ui.status);
      renderDrained(ui.status);
      renderFabric(ui.status);
      drawChart();
    } else {
      error = st.reason;
    }
    if (ev.status === 'fulfilled') {
      ui.events = ev.value;
      renderEvents(ui.events);
    } else {
      error = error || ev.reason;
      setText('events-note', 'Events: ' + ev.reason.message);
    }
    ui.renderMs = performance.now() - t0;
    ui.error = error;
    ui.refused = !!(error && (error.status === 401 || error.status === 403));
    if (!error) ui.lastOk = Date.now();
    ui.refreshes++;
    ui.inFlight = false;
    updateStatusLine();
    if (ui.again) { ui.again = false; refresh(); } else { schedule(); }
  }

  // ---- search: one job or one node ---------------------------------------------

  function badge(id, text, cls) {
    setText(id, text);
    $(id).className = 'badge ' + String(cls).replace(/[^a-z_]/g, '');
  }

  // A report state as a coloured label; "pending" (no report) reads so.
  function cxiBadge(tr, state) {
    const td = el('td');
    const label = state === 'pending' || state === 'none' ? 'no report' : state;
    td.appendChild(el('span', 'cxi ' + String(state).replace(/[^a-z_]/g, ''), label));
    tr.appendChild(td);
  }

  function servicesText(list) {
    if (!Array.isArray(list) || !list.length) return '\u2013';
    return list.map((sv) => (sv && typeof sv === 'object')
      ? plain(sv.device) + ':' + plain(sv.svc_id) : String(sv)).join(', ');
  }

  function whenBy(iso, by) {
    return iso ? fmtTime(iso) + ' (' + fmtAge(ageOf(iso)) + ' ago)' + (by ? ' by ' + by : '') : '';
  }

  function eventsNote(id, settled, what) {
    if (settled.status !== 'fulfilled') {
      setText(id, 'Events: ' + settled.reason.message);
      return;
    }
    const n = (settled.value.events || []).length;
    setText(id, n ? 'The ' + n + ' newest event' + (n === 1 ? '' : 's') + ' naming this ' + what +
      (settled.value.next ? '; older ones are in the API (GET /v1/events).' : '.')
      : 'No event names this ' + what + '.');
  }

  // The rows of the job's report table, those that need an admin first.
  const REPORT_STATES = ['failed', 'creating', 'created', 'destroyed', 'pending'];

  // The job found (j: its reservation or null; n: its nodes by report or
  // null) and its events (a settled promise).
  function renderJob(q, j, n, events) {
    setText('job-id', j ? j.job_id : q);
    if (j) {
      badge('job-state', j.state + (j.quarantined ? ', quarantined' : ''), j.state);
    } else {
      badge('job-state', 'no reservation', 'unknown');
    }
    const h = j && j.hwcoll;
    setText('job-reservation', j ? '#' + plain(j.id) : 'none kept for this job id');
    setText('job-user', j ? plain(j.user) + ' (uid ' + plain(j.uid) + ')' : '\u2013');
    setText('job-nodes', j ? plain(j.nodes) + ' (' + plain(j.node_count) + ')' : '\u2013');
    setText('job-vnis', j && j.vnis && j.vnis.length ? j.vnis.join(', ') : '\u2013');
    setText('job-tcs', j && j.traffic_classes ? j.traffic_classes.join(', ') + ' (' + plain(j.tcs_mask) + ')' : '\u2013');
    setText('job-created', j ? whenBy(j.created_at, j.created_by) : '\u2013');
    let released = '\u2013';
    if (j && j.released_at) released = whenBy(j.released_at, j.released_by) + (j.forced ? ', forced' : '');
    else if (j && j.release_requested_at) released = 'asked ' + whenBy(j.release_requested_at, '') + '; quarantined until its nodes confirm';
    else if (j) released = 'not yet';
    setText('job-released', released);
    setText('job-hwcoll', h ? plain(h.state) + ' (mode ' + plain(h.mode) + ')' : (j ? 'not asked for' : '\u2013'));
    setText('job-fm-job', h && h.fm_job_id ? h.fm_job_id : '\u2013');
    setText('job-hwcoll-reason', h && h.reason ? h.reason : 'none');

    const states = n && n.states ? REPORT_STATES.map((k) => ({ k, s: n.states[k] || {} })) : [];
    fillTable('job-states-table', states, (it) => {
      const tr = el('tr');
      cxiBadge(tr, it.k);
      cell(tr, 'num', plain(it.s.count));
      cell(tr, 'hostlist', it.s.nodes || '\u2013');
      return tr;
    }, 'No reservation is kept for this job id: it was never reserved, or its history was purged. Its events are below.');
    const reports = (n && n.reports) || [];
    fillTable('job-reports-table', reports, (r) => {
      const tr = el('tr');
      cell(tr, 'mono', r.node);
      cxiBadge(tr, r.cxi);
      cell(tr, 'mono', servicesText(r.services));
      cell(tr, '', r.message === null || r.message === undefined ? '\u2013' : r.message);
      timeCell(tr, r.updated_at);
      return tr;
    }, 'No node has reported.');
    setText('job-reports-more', n && n.reports_total > reports.length
      ? 'Showing ' + reports.length + ' of ' + n.reports_total + ' reports, failed first.'
      : '');

    fillTable('job-events', events.status === 'fulfilled' ? events.value.events : [], eventRow, null);
    eventsNote('job-events-note', events, 'job');
    $('search-job').hidden = false;
  }

  function renderNode(nd, events) {
    setText('node-name', nd.node);
    badge('node-drained', nd.drained ? 'drained' : 'not drained', nd.drained ? 'drained' : 'no');
    setText('node-reason', nd.drained ? plain(nd.drained_reason) : '\u2013');
    setText('node-since', nd.drained ? whenBy(nd.drained_at, '') : '\u2013');
    setText('node-inventory', nd.in_inventory === true ? 'listed in topology.conf'
      : nd.in_inventory === false ? 'not in topology.conf' : 'no inventory configured');
    setText('node-holding', plain(nd.cleanup_needed));
    fillTable('node-jobs-table', nd.reservations || [], (r) => {
      const tr = el('tr');
      cell(tr, 'mono', jobText(r));
      cell(tr, 'num', plain(r.id));
      cell(tr, '', plain(r.state));
      cell(tr, 'mono', (r.vnis || []).join(', ') || '\u2013');
      cxiBadge(tr, r.cxi);
      cell(tr, 'mono', servicesText(r.services));
      cell(tr, '', r.cleanup_needed ? 'yes' : 'no');
      return tr;
    }, 'No live reservation includes this node.');
    fillTable('node-events', events.status === 'fulfilled' ? events.value.events : [], eventRow, null);
    eventsNote('node-events-note', events, 'node');
    $('search-node').hidden = false;
  }

  function searchNote(text, isError) {
    setText('search-note', text);
    $('search-note').className = 'note' + (isError ? ' error' : '');
  }

  function eventsOf(key, q) {
    const p = new URLSearchParams({ order: 'desc', limit: String(SEARCH_EVENTS) });
    p.set(key, q);
    return '/v1/events?' + p.toString();
  }

  // Look q up as a job id and as a node name (GET /v1/search, one call
  // that answers 200 whether q names a job, a node, both or nothing), then
  // the events of whichever it may be; show what exists.
  async function search(q) {
    const seq = ++ui.searchSeq;
    q = q.trim();
    $('search-job').hidden = true;
    $('search-node').hidden = true;
    setFragmentFind(q);
    if (!q) { searchNote('', false); ui.searches++; return; }
    if (!token()) { searchNote('Paste a token first.', true); ui.searches++; return; }
    searchNote('Looking up \u201c' + q + '\u201d\u2026', false);
    const none = Promise.resolve({ events: [] });
    let found;
    try {
      found = await api('/v1/search?' + new URLSearchParams({ q: q, limit: String(SEARCH_REPORTS) }).toString());
    } catch (e) {
      if (seq !== ui.searchSeq) return;
      ui.searches++;
      searchNote((e.status === 401 || e.status === 403 ? 'Token refused: ' : 'The lookup failed: ') + e.message + '.', true);
      return;
    }
    if (!found.job_id_valid && !found.node_name_valid) {
      ui.searches++;
      searchNote('\u201c' + q + '\u201d is neither a job id (1-128 characters from [A-Za-z0-9._:@+-], not starting ' +
        'with \u2018-\u2019) nor a node name (letters, digits, \u2018-\u2019, \u2018_\u2019 and \u2018.\u2019).', true);
      return;
    }
    const [jobEv, nodeEv] = await Promise.allSettled([
      found.job_id_valid ? api(eventsOf('job_id', q)) : none,
      found.node_name_valid ? api(eventsOf('node', q)) : none,
    ]);
    if (seq !== ui.searchSeq) return; // a newer search replaced this one
    ui.searches++;
    const count = (r) => (r.status === 'fulfilled' ? (r.value.events || []).length : 0);
    const nd = found.node;
    const jobShown = !!found.job || count(jobEv) > 0;
    const nodeShown = !!nd && (nd.drained || (nd.reservations || []).length > 0 ||
      count(nodeEv) > 0 || nd.in_inventory === true);
    if (jobShown) renderJob(q, found.job, found.job_nodes, jobEv);
    if (nodeShown) renderNode(nd, nodeEv);
    if (jobShown || nodeShown) {
      searchNote((jobShown && nodeShown ? 'A job and a node named \u201c' + q + '\u201d'
        : (jobShown ? 'Job' : 'Node') + ' \u201c' + q + '\u201d') + ', as of ' + fmtClock(Date.now()) +
        ' (Find again to refresh).', false);
      return;
    }
    const failed = [jobEv, nodeEv].find((r) => r.status === 'rejected');
    if (failed) {
      searchNote('The lookup failed: ' + failed.reason.message + '.', true);
      return;
    }
    searchNote('No job or node named \u201c' + q + '\u201d: ' +
      (found.job_id_valid ? 'no reservation has that job id and no event names it' : 'it is no job id') + '; ' +
      (found.node_name_valid ? 'no reservation, drain or event names such a node' +
        (nd && nd.in_inventory === false ? ', and topology.conf does not list it' : '') : 'it is no node name') + '.', true);
  }

  // ---- wiring ----------------------------------------------------------------

  function readFilters() {
    ui.filters = {
      action: $('filter-action').value,
      node: $('filter-node').value.trim(),
      job_id: $('filter-job').value.trim(),
    };
  }

  function start() {
    takeFragmentToken();
    showTokenState();

    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const t = $('token-input').value.trim();
      $('token-input').value = '';
      if (!t) return;
      sessionStorage.setItem(TOKEN_KEY, t);
      ui.refused = false;
      ui.error = null;
      showTokenState();
      refresh();
    });
    $('token-forget').addEventListener('click', () => {
      sessionStorage.removeItem(TOKEN_KEY);
      // Start afresh, without the figures the token could read.
      location.replace(location.pathname);
    });
    $('event-filters').addEventListener('submit', (e) => {
      e.preventDefault();
      readFilters();
      refresh();
    });
    $('filter-action').addEventListener('change', () => { readFilters(); refresh(); });
    $('filter-clear').addEventListener('click', () => {
      $('filter-action').value = '';
      $('filter-node').value = '';
      $('filter-job').value = '';
      readFilters();
      refresh();
    });
    $('search-form').addEventListener('submit', (e) => {
      e.preventDefault();
      search($('search-input').value);
    });
    $('search-clear').addEventListener('click', () => {
      $('search-input').value = '';
      search('');
    });
    $('chart-free').addEventListener('change', queueDraw);
    if (window.ResizeObserver) new ResizeObserver(queueDraw).observe($('pool-chart').parentElement);
    window.addEventListener('resize', queueDraw);
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible') {
        if (Date.now() - ui.lastOk >= REFRESH_MS) refresh(); else schedule();
      } else {
        clearTimeout(ui.timer);
        ui.timer = 0;
      }
      updateStatusLine();
    });
    setInterval(() => { if (document.visibilityState === 'visible') updateStatusLine(); }, 1000);

    // Read-only figures for the browser test and for a look from the
    // developer console.
    Object.defineProperty(window, 'vnibStatusPage', {
      value: Object.freeze({
        refreshes: () => ui.refreshes,
        renderMs: () => ui.renderMs,
        error: () => (ui.error ? ui.error.message : null),
        refresh: refresh,
        searches: () => ui.searches,
      }),
    });
    updateStatusLine();
    refresh();
    const find = fragmentFind();
    if (find) {
      $('search-input').value = find;
      search(find);
    }
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
}());
