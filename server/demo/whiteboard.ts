/**
 * Symphony demo whiteboard. Shapes live in a Yjs document synced through the Symphony server;
 * names and cursors travel as awareness (presence) state. The screen is always rendered from the
 * Yjs state, so local and remote edits take the same path.
 */
import { WebsocketProvider } from 'y-websocket'
import * as Y from 'yjs'
import { isValidRoomName } from '../src/protocol/room-name.js'

type Kind = 'rect' | 'ellipse'
/** One shape: its own Y.Map, so concurrent edits of different keys (move vs recolour) both survive. */
type ShapeMap = Y.Map<string | number>
type Point = { x: number; y: number }
type Box = Point & { w: number; h: number }
type Shape = Box & { kind: Kind; color: string }
type User = { name: string; color: string }

declare global {
  interface Window {
    symphonyDemo: { doc: Y.Doc; provider: WebsocketProvider; shapes: Y.Map<ShapeMap>; room: string }
  }
}

const SVG_NS = 'http://www.w3.org/2000/svg'
const PALETTE = [
  { name: 'Red', color: '#ef4444' },
  { name: 'Amber', color: '#f59e0b' },
  { name: 'Green', color: '#10b981' },
  { name: 'Blue', color: '#3b82f6' },
  { name: 'Violet', color: '#8b5cf6' },
  { name: 'Pink', color: '#ec4899' },
] as const
const ANIMALS = ['Otter', 'Fox', 'Panda', 'Koala', 'Heron', 'Lynx', 'Badger', 'Puffin', 'Gecko', 'Walrus']
const DEFAULT_SIZE = { w: 100, h: 70 }
/** Pixels the pointer must travel before a press counts as a drag rather than a click. */
const DRAG_THRESHOLD = 4
/** Minimum milliseconds between cursor broadcasts: smooth enough, without flooding the room. */
const CURSOR_INTERVAL = 30

// --- Connection ---------------------------------------------------------------------------------

const query = new URLSearchParams(location.search)
const roomParam = query.get('room') ?? ''
const room = isValidRoomName(roomParam) ? roomParam : 'demo'
const token = query.get('token')
const params: Record<string, string> = token ? { token } : {}
const wsUrl = `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}`

const doc = new Y.Doc()
// Without disableBc, tabs of one browser also sync over a BroadcastChannel, which would hide
// whether the server itself relays updates - the point of this demo.
const provider = new WebsocketProvider(wsUrl, room, doc, { params, disableBc: true })
const shapes = doc.getMap<ShapeMap>('shapes')
const awareness = provider.awareness
window.symphonyDemo = { doc, provider, shapes, room }

// --- DOM ----------------------------------------------------------------------------------------

function byId<T extends Element = HTMLElement>(id: string): T {
  const el = document.getElementById(id)
  if (!el) throw new Error(`#${id} is missing from index.html`)
  return el as Element as T
}
const canvas = byId<SVGSVGElement>('canvas')
const shapeLayer = byId<SVGGElement>('shapes')
const cursorLayer = byId('cursors')
const statusEl = byId('status')
const peopleEl = byId('people')
const paletteEl = byId('palette')
byId('room').textContent = room

// --- Toolbar ------------------------------------------------------------------------------------

let kind: Kind = 'rect'
let color: string = PALETTE[3].color
let selectedId: string | null = null

const kindButtons = [...document.querySelectorAll<HTMLButtonElement>('[data-kind]')]
for (const button of kindButtons) {
  button.addEventListener('click', () => {
    kind = button.dataset.kind === 'ellipse' ? 'ellipse' : 'rect'
    renderToolbar()
  })
}

const swatches = PALETTE.map((entry) => {
  const button = document.createElement('button')
  button.type = 'button'
  button.className = 'swatch'
  button.title = entry.name
  button.style.background = entry.color
  button.dataset.color = entry.color
  button.addEventListener('click', () => {
    color = entry.color
    // With a shape selected the palette recolours it (the colour also applies to new shapes).
    if (selectedId) shapes.get(selectedId)?.set('color', entry.color)
    renderToolbar()
  })
  paletteEl.append(button)
  return button
})

function renderToolbar(): void {
  for (const b of kindButtons) b.setAttribute('aria-pressed', String(b.dataset.kind === kind))
  for (const b of swatches) b.setAttribute('aria-pressed', String(b.dataset.color === color))
}

function renderStatus(): void {
  // Derived from the provider's flags rather than event payloads, so every event gives one answer.
  let status = provider.wsconnecting ? 'connecting' : 'disconnected'
  if (provider.wsconnected) status = provider.synced ? 'synced' : 'connected'
  statusEl.textContent = status
  statusEl.dataset.status = status
}
provider.on('status', renderStatus)
provider.on('sync', renderStatus)
// The provider clears its flags just after emitting 'connection-close', so read them a tick later.
provider.on('connection-close', () => queueMicrotask(renderStatus))
provider.on('closed', ({ code, reason }) => {
  // The server said reconnecting cannot help (e.g. auth refused): show why on hover.
  statusEl.title = `Closed by the server: ${code}${reason ? ` ${reason}` : ''}`
  renderStatus()
})

// --- Shapes -------------------------------------------------------------------------------------

/** Reads a shape defensively: peers may write anything, and a bad entry must not break rendering. */
function readShape(value: unknown): Shape | null {
  if (!(value instanceof Y.Map)) return null
  const num = (key: string): number => {
    const v: unknown = value.get(key)
    return typeof v === 'number' && Number.isFinite(v) ? v : Number.NaN
  }
  const kind: unknown = value.get('kind')
  const color: unknown = value.get('color')
  const box = { x: num('x'), y: num('y'), w: num('w'), h: num('h') }
  if ((kind !== 'rect' && kind !== 'ellipse') || typeof color !== 'string') return null
  if (Object.values(box).some(Number.isNaN)) return null
  return { kind, color, ...box }
}

let idCounter = 0
function createShape(box: Box): string {
  // A time prefix makes ids sort in creation order, which gives every client the same stacking;
  // the client id and a counter keep them unique.
  const id = `${Date.now().toString(36)}-${doc.clientID.toString(36)}-${(idCounter++).toString(36)}`
  const shape: Shape = { kind, color, ...box }
  shapes.set(id, new Y.Map<string | number>(Object.entries(shape)))
  return id
}

/** Removes the elements whose key is no longer wanted. */
function prune<K>(els: Map<K, Element>, keep: (key: K) => boolean): void {
  for (const [key, el] of els) {
    if (keep(key)) continue
    el.remove()
    els.delete(key)
  }
}

const shapeEls = new Map<string, SVGElement>()
function renderShapes(): void {
  const seen = new Set<string>()
  let prev: Element | null = null
  for (const id of [...shapes.keys()].sort()) {
    const s = readShape(shapes.get(id))
    if (!s) continue
    seen.add(id)
    let el = shapeEls.get(id)
    if (el?.tagName !== s.kind) {
      el?.remove()
      el = document.createElementNS(SVG_NS, s.kind)
      el.classList.add('shape')
      el.dataset.shapeId = id
      shapeEls.set(id, el)
    }
    const w = Math.max(1, s.w)
    const h = Math.max(1, s.h)
    const attrs: Record<string, number | string> =
      s.kind === 'rect'
        ? { x: s.x, y: s.y, width: w, height: h, rx: 6 }
        : { cx: s.x + w / 2, cy: s.y + h / 2, rx: w / 2, ry: h / 2 }
    for (const [name, v] of Object.entries(attrs)) el.setAttribute(name, String(v))
    el.setAttribute('fill', s.color)
    el.classList.toggle('selected', id === selectedId)
    // Only move nodes that are out of order, so unchanged shapes stay put in the DOM.
    const expected: Element | null = prev ? prev.nextElementSibling : shapeLayer.firstElementChild
    if (expected !== el) shapeLayer.insertBefore(el, expected)
    prev = el
  }
  prune(shapeEls, (id) => seen.has(id))
  if (selectedId && !seen.has(selectedId)) selectedId = null
}

// --- Pointer interaction ------------------------------------------------------------------------

/** A press in progress: drawing a new shape (id set once it exists) or moving an existing one. */
type Gesture =
  | { type: 'draw'; start: Point; dragging: boolean; id: string | null }
  | { type: 'move'; start: Point; dragging: boolean; id: string; origin: Point }
let gesture: Gesture | null = null

function toCanvas(e: PointerEvent): Point {
  // Clamped to the canvas so shapes cannot be drawn or dragged out of reach.
  const r = canvas.getBoundingClientRect()
  const clamp = (v: number, max: number) => Math.round(Math.min(Math.max(v, 0), max))
  return { x: clamp(e.clientX - r.left, r.width), y: clamp(e.clientY - r.top, r.height) }
}

canvas.addEventListener('pointerdown', (e) => {
  if (e.button !== 0) return
  const start = toCanvas(e)
  const id = (e.target as Element).closest('[data-shape-id]')?.getAttribute('data-shape-id') ?? null
  const shape = id ? readShape(shapes.get(id)) : null
  // Capture on the canvas (not the shape), so re-rendering shapes never loses the drag.
  canvas.setPointerCapture(e.pointerId)
  if (id && shape) {
    selectedId = id
    gesture = { type: 'move', start, dragging: false, id, origin: { x: shape.x, y: shape.y } }
  } else {
    selectedId = null
    gesture = { type: 'draw', start, dragging: false, id: null }
  }
  renderShapes()
})

canvas.addEventListener('pointermove', (e) => {
  const p = toCanvas(e)
  sendCursor(p)
  if (!gesture) return
  const dx = p.x - gesture.start.x
  const dy = p.y - gesture.start.y
  if (!gesture.dragging && Math.hypot(dx, dy) < DRAG_THRESHOLD) return
  gesture.dragging = true
  if (gesture.type === 'move') {
    const shape = shapes.get(gesture.id)
    if (!shape) {
      gesture = null // deleted by someone else mid-drag
      return
    }
    const { origin } = gesture
    // One transaction, so peers never see x applied without y.
    doc.transact(() => {
      shape.set('x', origin.x + dx)
      shape.set('y', origin.y + dy)
    })
    return
  }
  const { start } = gesture
  const box = { x: Math.min(start.x, p.x), y: Math.min(start.y, p.y), w: Math.abs(dx), h: Math.abs(dy) }
  const shape = gesture.id ? shapes.get(gesture.id) : undefined
  if (shape) {
    doc.transact(() => {
      for (const [key, v] of Object.entries(box)) shape.set(key, v)
    })
  } else {
    // Created on the first real movement, so peers watch the shape being drawn.
    gesture.id = createShape(box)
  }
})

canvas.addEventListener('pointerup', () => {
  if (gesture?.type === 'draw' && !gesture.dragging) {
    // A plain click drops a default-sized shape centred on the pointer.
    const { x, y } = gesture.start
    createShape({ x: x - DEFAULT_SIZE.w / 2, y: y - DEFAULT_SIZE.h / 2, ...DEFAULT_SIZE })
  }
  gesture = null
})
canvas.addEventListener('pointercancel', () => {
  gesture = null
})
canvas.addEventListener('pointerleave', () => sendCursor(null))

window.addEventListener('keydown', (e) => {
  if ((e.key === 'Delete' || e.key === 'Backspace') && selectedId) {
    e.preventDefault()
    shapes.delete(selectedId) // renderShapes clears the selection
  } else if (e.key === 'Escape' && selectedId) {
    selectedId = null
    renderShapes()
  }
})

// --- Presence -----------------------------------------------------------------------------------

const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)] as T
const hue = pick(PALETTE)
const user: User = {
  name: query.get('name')?.trim().slice(0, 40) || `${hue.name} ${pick(ANIMALS)}`,
  color: hue.color,
}
awareness.setLocalState({ user, cursor: null })

// Throttled with a trailing send, so the last position (or the null on leave) always goes out.
let pendingCursor: Point | null = null
let cursorTimer: ReturnType<typeof setTimeout> | undefined
let lastCursorSent = 0
function sendCursor(cursor: Point | null): void {
  pendingCursor = cursor
  if (cursorTimer !== undefined) return
  cursorTimer = setTimeout(
    () => {
      cursorTimer = undefined
      lastCursorSent = performance.now()
      awareness.setLocalStateField('cursor', pendingCursor)
    },
    Math.max(0, lastCursorSent + CURSOR_INTERVAL - performance.now()),
  )
}

// Say goodbye explicitly so peers drop our cursor at once instead of after a timeout.
window.addEventListener('pagehide', () => awareness.setLocalState(null))
window.addEventListener('pageshow', (e) => {
  if (e.persisted) awareness.setLocalState({ user, cursor: null })
})

/** Reads a peer's presence defensively; null when it has no visible cursor. */
function readPresence(state: Record<string, unknown>): { user: User; cursor: Point } | null {
  const u = state.user as Partial<User> | undefined
  const c = state.cursor as Partial<Point> | null | undefined
  if (typeof u?.name !== 'string' || typeof u.color !== 'string') return null
  if (!Number.isFinite(c?.x) || !Number.isFinite(c?.y)) return null
  return { user: { name: u.name.slice(0, 40), color: u.color }, cursor: c as Point }
}

function createCursorEl(clientId: number): HTMLElement {
  const el = document.createElement('div')
  el.className = 'cursor'
  el.dataset.cursorClient = String(clientId)
  // Static markup only; the name is set later through textContent.
  el.innerHTML =
    '<svg viewBox="0 0 18 18"><path d="M1 1v14l4-3.6 2.8 5.6 2.3-1.1-2.7-5.4H13z" fill="currentColor" stroke="#fff"/></svg><span class="label"></span>'
  return el
}

const cursorEls = new Map<number, HTMLElement>()
function renderPresence(): void {
  const states = awareness.getStates()
  peopleEl.textContent = String(states.size)
  const visible = new Set<number>()
  for (const [clientId, state] of states) {
    const presence = clientId === doc.clientID ? null : readPresence(state)
    if (!presence) continue
    visible.add(clientId)
    let el = cursorEls.get(clientId)
    if (!el) {
      el = createCursorEl(clientId)
      cursorEls.set(clientId, el)
      cursorLayer.append(el)
    }
    // The arrow's tip sits at (1, 1) in its box.
    el.style.transform = `translate(${presence.cursor.x - 1}px, ${presence.cursor.y - 1}px)`
    el.style.color = presence.user.color
    const label = el.lastElementChild as HTMLElement
    label.textContent = presence.user.name
    label.style.background = presence.user.color
  }
  prune(cursorEls, (clientId) => visible.has(clientId))
}

// --- Wire up ------------------------------------------------------------------------------------

shapes.observeDeep(renderShapes)
awareness.on('change', renderPresence)
renderToolbar()
renderStatus()
renderShapes()
renderPresence()
