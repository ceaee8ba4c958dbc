// The Symphony dashboard page: plain ES modules, no build step. Everything comes from the JSON API
// beside it; live changes arrive as Server-Sent Events (/api/events) and trigger re-reads, so the
// page never polls. Charts are uPlot (served from the installed package under ./vendor/).

import uPlot from './vendor/uPlot.esm.js'

const $ = (selector) => document.querySelector(selector)

/** GET an API route; a 401 shows the sign-in form (the cookie is missing or stale). */
async function api(path) {
  const response = await fetch(path, { headers: { accept: 'application/json' } })
  if (response.status === 401) {
    showLogin()
    throw new Error('signed out')
  }
  const body = await response.json()
  if (!response.ok) throw new Error(body.error?.message ?? response.statusText)
  return body
}

function showLogin() {
  for (const id of ['#overview', '#room']) $(id).hidden = true
  $('#login').hidden = false
  $('#login-error').hidden = !location.search.includes('login=failed')
}

const formatBytes = (n) =>
  n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 ** 2).toFixed(1)} MiB`
const formatTime = (iso) => (iso ? new Date(iso).toLocaleTimeString() : '')

function cell(text) {
  const td = document.createElement('td')
  td.textContent = String(text)
  return td
}

function fillTable(table, rows, toCells) {
  const body = table.querySelector('tbody')
  body.replaceChildren(
    ...rows.map((row) => {
      const tr = document.createElement('tr')
      tr.append(...toCells(row))
      return tr
    }),
  )
}

/** One colour per series, in order: distinct, and readable on white. */
const COLORS = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563']
const formatRate = (n) => (n >= 1000 ? `${(n / 1000).toFixed(1)}k` : n >= 10 ? n.toFixed(0) : n.toFixed(1))
const formatPercent = (n) => `${n.toFixed(n >= 10 ? 0 : 1)} %`
const formatBytesAxis = (n) => (n === 0 ? '0' : formatBytes(Math.round(n)))

/** The uPlot chart in each box, kept so new data only redraws it. */
const charts = new Map()

/** A series' points are drawn when it has too few values to show as a line. */
const fewValues = (u, seriesIndex) => u.data[seriesIndex].filter((v) => v != null).length <= 3

/**
 * Draws `series` ([{ label, values }]) over `times` (seconds) in the box `id` with uPlot: a time
 * axis over `window` ([from, to] in seconds, the range asked for), a value axis formatted with
 * `format`, and a legend naming every series.
 */
function drawChart(id, window, times, series, format = formatRate) {
  const box = $(`#${id}`)
  const data = [times, ...series.map((s) => s.values)]
  const labels = series.map((s) => s.label).join('\n')
  const existing = charts.get(id)
  if (existing && existing.labels === labels) {
    existing.window = window
    existing.plot.setData(data)
    return
  }
  existing?.plot.destroy()
  box.replaceChildren()
  const options = {
    width: Math.max(240, box.clientWidth),
    height: 170,
    cursor: { drag: { x: false, y: false } },
    legend: { live: true },
    scales: {
      x: { time: true, range: () => charts.get(id)?.window ?? window },
      y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
    },
    axes: [
      { stroke: '#52606d', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#e4e7eb' } },
      {
        stroke: '#52606d',
        size: 78,
        grid: { stroke: '#eef0f3' },
        ticks: { stroke: '#e4e7eb' },
        values: (_u, splits) => splits.map(format),
      },
    ],
    series: [
      { label: 'time' },
      ...series.map((s, i) => ({
        label: s.label,
        stroke: COLORS[i % COLORS.length],
        width: 1.5,
        spanGaps: true,
        points: { show: fewValues },
        value: (_u, v) => (v == null ? '—' : format(v)),
      })),
    ],
  }
  charts.set(id, { plot: null, labels, window })
  const plot = new uPlot(options, data, box)
  charts.set(id, { plot, labels, window })
}

window.addEventListener('resize', () => {
  for (const [id, { plot }] of charts)
    plot.setSize({ width: Math.max(240, $(`#${id}`).clientWidth), height: 170 })
})

/**
 * Lines up every server's samples on one time axis (the API's steps are aligned): one value per
 * server per time, null where a server has none (it had not started, or was gone).
 */
function alignSamples(servers) {
  const times = [...new Set(servers.flatMap((s) => s.samples.map((p) => Date.parse(p.at) / 1000)))].sort(
    (a, b) => a - b,
  )
  const index = new Map(times.map((t, i) => [t, i]))
  const column = (server, pick) => {
    const values = new Array(times.length).fill(null)
    for (const p of server.samples) values[index.get(Date.parse(p.at) / 1000)] = pick(p)
    return values
  }
  const perServer = (pick) => servers.map((s) => ({ label: s.id, values: column(s, pick) }))
  const total = (label, pick) => {
    const values = new Array(times.length).fill(null)
    for (const s of servers) {
      for (const p of s.samples) {
        const i = index.get(Date.parse(p.at) / 1000)
        values[i] = (values[i] ?? 0) + pick(p)
      }
    }
    return { label, values }
  }
  return { times, perServer, total }
}

/** The server charts, for the range chosen; drawn again on each `samples` event. */
async function renderCharts(stats) {
  const since = new Date(Date.now() - Number($('#range').value)).toISOString()
  const samples = await api(`./api/servers/samples?since=${encodeURIComponent(since)}`)
  const { times, perServer, total } = alignSamples(samples.servers)
  const window = [Date.parse(samples.since) / 1000, Date.parse(samples.until) / 1000]
  drawChart(
    'chart-connections',
    window,
    times,
    perServer((p) => p.connections),
    String,
  )
  drawChart(
    'chart-rooms',
    window,
    times,
    perServer((p) => p.rooms),
    String,
  )
  drawChart('chart-messages', window, times, [
    total('in', (p) => p.messagesInPerSecond),
    total('out', (p) => p.messagesOutPerSecond),
  ])
  drawChart(
    'chart-traffic',
    window,
    times,
    [total('in', (p) => p.bytesInPerSecond), total('out', (p) => p.bytesOutPerSecond)],
    (n) => `${formatBytesAxis(n)}/s`,
  )
  drawChart(
    'chart-errors',
    window,
    times,
    perServer((p) => p.errors),
    String,
  )
  drawChart(
    'chart-cpu',
    window,
    times,
    perServer((p) => p.cpu * 100),
    formatPercent,
  )
  drawChart(
    'chart-memory',
    window,
    times,
    perServer((p) => p.rssBytes),
    formatBytesAxis,
  )
  if (stats) {
    const now = Date.now() / 1000
    drawChart(
      'chart-bytes',
      [now - 86_400, now],
      stats.series.map((s) => Date.parse(s.at) / 1000),
      [{ label: 'all documents', values: stats.series.map((s) => s.bytes) }],
      formatBytesAxis,
    )
  }
}

/** The room list's order: a column and a direction, changed by clicking the column's header. */
const roomOrder = { sort: 'connections', order: 'desc' }
/** Names read A to Z first; numbers and times biggest or newest first (as the API does). */
const FIRST_ORDER = { name: 'asc', connections: 'desc', bytes: 'desc', lastActive: 'desc' }

function showRoomOrder() {
  for (const th of document.querySelectorAll('#rooms th[data-sort]')) {
    if (th.dataset.sort === roomOrder.sort)
      th.setAttribute('aria-sort', roomOrder.order === 'asc' ? 'ascending' : 'descending')
    else th.removeAttribute('aria-sort')
  }
}

/** The header's totals, on every view; returns the stats for the charts. */
async function renderTotals() {
  const stats = await api('./api/stats')
  const t = stats.totals
  $('#totals').innerHTML =
    `<span><strong>${t.servers}</strong> servers</span><span><strong>${t.activeRooms}</strong> active rooms</span>` +
    `<span><strong>${t.connections}</strong> connections</span><span><strong>${formatBytes(t.bytes)}</strong> stored</span>`
  return stats
}

/** The overview; the charts too unless `withCharts` is false (a room event changes only tables). */
async function renderOverview(withCharts = true) {
  const query = `sort=${roomOrder.sort}&order=${roomOrder.order}&limit=100&q=${encodeURIComponent($('#search').value)}`
  const [stats, servers, rooms] = await Promise.all([
    renderTotals(),
    api('./api/servers'),
    api(`./api/rooms?${query}`),
  ])
  // Shown before drawing, so the charts take their boxes' real width.
  $('#overview').hidden = false
  if (withCharts) await renderCharts(stats)
  showRoomOrder()
  fillTable($('#servers'), servers.servers, (s) => [
    cell(s.id),
    cell(s.address),
    cell(s.rooms),
    cell(s.connections),
    cell(`${formatTime(s.lastHeartbeatAt)}${s.live ? '' : ' (gone)'}`),
  ])
  fillTable($('#rooms'), rooms.rooms, (r) => {
    const link = document.createElement('a')
    link.href = `#/rooms/${encodeURIComponent(r.name)}`
    link.textContent = r.name
    const name = document.createElement('td')
    name.append(link)
    const connections = cell(r.connections)
    connections.dataset.roomConnections = r.name
    return [name, connections, cell(formatBytes(r.bytes)), cell(formatTime(r.lastActiveAt))]
  })
}

/** The document as a collapsible tree: objects and arrays fold, the top levels start open. */
function jsonTree(value, key, depth = 0) {
  if (value !== null && typeof value === 'object') {
    const details = document.createElement('details')
    details.open = depth < 3
    const summary = document.createElement('summary')
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value)
    summary.innerHTML = key === undefined ? '' : `<span class="key"></span>: `
    if (key !== undefined) summary.querySelector('.key').textContent = key
    summary.append(Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`)
    details.append(summary, ...entries.map(([k, v]) => jsonTree(v, k, depth + 1)))
    return details
  }
  const leaf = document.createElement('div')
  leaf.className = 'leaf'
  if (key !== undefined) {
    const k = document.createElement('span')
    k.className = 'key'
    k.textContent = key
    leaf.append(k, ': ')
  }
  const v = document.createElement('span')
  v.className = typeof value
  v.textContent = JSON.stringify(value)
  leaf.append(v)
  return leaf
}

async function renderRoom(name, withDocument) {
  const [room] = await Promise.all([api(`./api/rooms/${encodeURIComponent(name)}`), renderTotals()])
  $('#room-name').textContent = room.name
  $('#room-connections').textContent = String(room.connections.length)
  $('#room-size').textContent = formatBytes(room.bytes)
  fillTable($('#room-sessions'), room.connections, (c) => [
    cell(c.userName ?? '—'),
    cell(c.userId),
    cell(c.userInfo ? JSON.stringify(c.userInfo) : ''),
    cell(c.serverId),
    cell(formatTime(c.openedAt)),
  ])
  if (withDocument) {
    $('#version').hidden = true
    await Promise.all([renderRoomJson(name), renderVersions(name).catch(showVersionsError)])
  }
}

async function renderRoomJson(name) {
  const target = $('#room-json')
  try {
    target.replaceChildren(jsonTree(await api(`./api/rooms/${encodeURIComponent(name)}/state`)))
  } catch (error) {
    target.textContent = error.message
  }
}

/** The versions table's next page, and the version shown below it. */
const versions = { cursor: null, shown: null }
const formatDateTime = (iso) => new Date(iso).toLocaleString()

/** The room's saved versions, newest first; `more` appends the next page. */
async function renderVersions(name, more = false) {
  const cursor = more && versions.cursor ? `&cursor=${encodeURIComponent(versions.cursor)}` : ''
  const page = await api(`./api/rooms/${encodeURIComponent(name)}/versions?limit=20${cursor}`)
  versions.cursor = page.nextCursor
  const rows = page.versions.map((version, index) => {
    const tr = document.createElement('tr')
    tr.dataset.version = version.id
    const action = document.createElement('td')
    if (version.deleted) action.textContent = 'the room’s deletion'
    else {
      const view = document.createElement('button')
      view.type = 'button'
      view.textContent = 'View'
      view.addEventListener('click', () => void showVersion(name, version).catch(showVersionsError))
      action.append(view)
    }
    const saved = formatDateTime(version.savedAt) + (!more && index === 0 ? ' · latest' : '')
    tr.append(cell(saved), cell(formatBytes(version.bytes)), action)
    return tr
  })
  const body = $('#room-versions tbody')
  if (more) body.append(...rows)
  else body.replaceChildren(...rows)
  $('#versions-more').hidden = versions.cursor === null
  $('#versions-error').textContent = body.children.length === 0 ? 'no saved versions yet' : ''
}

async function showVersion(name, version) {
  const json = await api(`./api/rooms/${encodeURIComponent(name)}/versions/${encodeURIComponent(version.id)}`)
  versions.shown = version
  $('#version-title').textContent = `Version saved ${formatDateTime(version.savedAt)}`
  $('#version-outcome').textContent = ''
  $('#version-json').replaceChildren(jsonTree(json))
  $('#version').hidden = false
}

function showVersionsError(error) {
  if (error.message !== 'signed out') $('#versions-error').textContent = error.message
}

function currentRoom() {
  const match = /^#\/rooms\/(.+)$/.exec(location.hash)
  if (!match) return null
  try {
    return decodeURIComponent(match[1])
  } catch {
    return match[1] // typed by hand, not a link of ours
  }
}

/** Shows the view the URL names. The document (possibly large) is read on arrival and on Reload only. */
async function render({ withDocument = true, withCharts = true } = {}) {
  const room = currentRoom()
  try {
    if (room) await renderRoom(room, withDocument)
    else await renderOverview(withCharts)
  } catch (error) {
    if (error.message !== 'signed out') console.error(error)
    return
  }
  // Shown only once filled: a signed-out visitor never glimpses an empty overview.
  $('#login').hidden = true
  $('#overview').hidden = room !== null
  $('#room').hidden = room === null
}

/** Live updates: each event names rooms whose connections changed; re-read what is on screen. */
function listen() {
  const events = new EventSource('./api/events')
  let pending = null
  events.addEventListener('open', () => {
    $('#live').dataset.state = 'live'
    $('#live').textContent = 'live'
  })
  events.addEventListener('error', () => {
    $('#live').dataset.state = 'connecting'
    $('#live').textContent = 'reconnecting…'
  })
  events.addEventListener('rooms', (event) => {
    const counts = JSON.parse(event.data)
    const room = currentRoom()
    for (const { room: name, connections } of counts) {
      if (name === room) $('#room-connections').textContent = String(connections)
    }
    // Coalesce bursts of events into one re-read.
    clearTimeout(pending)
    pending = setTimeout(() => render({ withDocument: false, withCharts: false }), 150)
  })
  // A server wrote samples: redraw the charts, at most every two seconds.
  let chartsPending = null
  events.addEventListener('samples', () => {
    if (chartsPending || currentRoom()) return
    chartsPending = setTimeout(() => {
      chartsPending = null
      void renderCharts(null).catch(() => {})
    }, 2_000)
  })
}

$('#search').addEventListener('input', () => void renderOverview(false).catch(() => {}))
$('#range').addEventListener('change', () => void renderOverview().catch(() => {}))
for (const th of document.querySelectorAll('#rooms th[data-sort]')) {
  th.querySelector('button').addEventListener('click', () => {
    const sort = th.dataset.sort
    roomOrder.order =
      sort === roomOrder.sort ? (roomOrder.order === 'asc' ? 'desc' : 'asc') : FIRST_ORDER[sort]
    roomOrder.sort = sort
    void renderOverview(false).catch(() => {})
  })
}
// Deleting closes every client of the room and removes what is stored: asked first.
$('#room-delete').addEventListener('click', async () => {
  const room = currentRoom()
  if (!room || !confirm(`Delete the room "${room}"? Its clients are disconnected and its document is gone.`))
    return
  const response = await fetch(`./api/rooms/${encodeURIComponent(room)}`, { method: 'DELETE' })
  if (response.ok) {
    location.hash = ''
    return
  }
  const body = await response.json().catch(() => null)
  $('#room-delete-error').textContent = body?.error?.message ?? `could not delete (${response.status})`
})
$('#room-refresh').addEventListener('click', () => {
  const room = currentRoom()
  if (room) void renderRoomJson(room)
})
$('#versions-refresh').addEventListener('click', () => {
  const room = currentRoom()
  if (room) void renderVersions(room).catch(showVersionsError)
})
$('#versions-more').addEventListener('click', () => {
  const room = currentRoom()
  if (room) void renderVersions(room, true).catch(showVersionsError)
})
// Restoring changes the live document for everyone in the room (an ordinary edit, itself saved as
// a new version, so it can be undone by restoring the one before): asked first.
$('#version-restore').addEventListener('click', async () => {
  const room = currentRoom()
  const version = versions.shown
  const when = version && formatDateTime(version.savedAt)
  if (
    !room ||
    !version ||
    !confirm(`Restore "${room}" to the version saved ${when}? Everyone in the room sees it at once.`)
  )
    return
  const path = `./api/rooms/${encodeURIComponent(room)}/versions/${encodeURIComponent(version.id)}/restore`
  const response = await fetch(path, { method: 'POST' })
  const body = await response.json().catch(() => null)
  $('#version-outcome').textContent = response.ok
    ? `Restored: the room now holds the version saved ${when}.`
    : (body?.error?.message ?? `could not restore (${response.status})`)
  if (response.ok) await Promise.all([renderRoomJson(room), renderVersions(room).catch(showVersionsError)])
})
window.addEventListener('hashchange', () => render())
void render().then(() => {
  if ($('#login').hidden) listen()
})
