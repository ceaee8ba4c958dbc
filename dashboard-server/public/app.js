// The Symphony dashboard page: plain ES modules, no build step. Everything comes from the JSON API
// beside it; live changes arrive as Server-Sent Events (/api/events) and trigger re-reads, so the
// page never polls.

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

/** A line chart of `values` over `times` in an <svg>, scaled to its box. */
function drawChart(svg, points, label) {
  const width = svg.clientWidth || 500
  const height = svg.clientHeight || 140
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`)
  if (points.length === 0) {
    svg.innerHTML = `<title>${svg.ariaLabel}</title><text x="8" y="20">no samples yet</text>`
    return
  }
  const max = Math.max(1, ...points.map((p) => p.value))
  const first = points[0].time
  const span = Math.max(1, points[points.length - 1].time - first)
  const xy = points.map((p) => {
    const x = 4 + ((p.time - first) / span) * (width - 8)
    const y = height - 18 - (p.value / max) * (height - 30)
    return `${x.toFixed(1)},${y.toFixed(1)}`
  })
  svg.innerHTML = `<title>${svg.ariaLabel}</title><polyline points="${xy.join(' ')}"/><text x="4" y="12">max ${label(max)}</text>`
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

async function renderOverview() {
  const [stats, servers, rooms] = await Promise.all([
    renderTotals(),
    api('./api/servers'),
    api(`./api/rooms?sort=connections&limit=100&q=${encodeURIComponent($('#search').value)}`),
  ])
  const series = stats.series.map((s) => ({
    time: Date.parse(s.at),
    connections: s.connections,
    bytes: s.bytes,
  }))
  drawChart(
    $('#chart-connections'),
    series.map((s) => ({ time: s.time, value: s.connections })),
    String,
  )
  drawChart(
    $('#chart-bytes'),
    series.map((s) => ({ time: s.time, value: s.bytes })),
    formatBytes,
  )
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
  if (withDocument) await renderRoomJson(name)
}

async function renderRoomJson(name) {
  const target = $('#room-json')
  try {
    target.replaceChildren(jsonTree(await api(`./api/rooms/${encodeURIComponent(name)}/state`)))
  } catch (error) {
    target.textContent = error.message
  }
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
async function render({ withDocument = true } = {}) {
  const room = currentRoom()
  try {
    if (room) await renderRoom(room, withDocument)
    else await renderOverview()
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
    pending = setTimeout(() => render({ withDocument: false }), 150)
  })
}

$('#search').addEventListener('input', () => void renderOverview().catch(() => {}))
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
window.addEventListener('hashchange', () => render())
void render().then(() => {
  if ($('#login').hidden) listen()
})
