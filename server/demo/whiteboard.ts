/**
 * Symphony demo whiteboard, built on @symphony/client. Shapes live in the room's shared map;
 * names and cursors travel as presence. The screen is always rendered from the shared state, so
 * local, remote and stored (offline) edits take the same path.
 */
import {
  createClient,
  isValidRoomName,
  ROOM_NAME_RULE,
  type Room,
  type RoomStatus,
  type SymphonyClientError,
} from '@symphony/client'
import * as Y from 'yjs'
import { CursorLayer, type DemoPresence, type Point, type User } from './cursors.js'
import { demoAuth } from './dev-token.js'

type Kind = 'rect' | 'ellipse'
/** One shape: its own Y.Map, so concurrent edits of different keys (move vs recolour) both survive. */
type ShapeMap = Y.Map<string | number>
type Box = Point & { w: number; h: number }
type Shape = Box & { kind: Kind; color: string }

declare global {
  interface Window {
    symphonyDemo: { room: Room<DemoPresence>; shapes: Y.Map<ShapeMap> }
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
const roomName = isValidRoomName(roomParam) ? roomParam : 'demo'
const wsUrl = `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}`

// crossTab off: tabs of one browser would otherwise sync over a BroadcastChannel, which would
// hide whether the server itself relays updates - the point of this demo.
const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)] as T
const hue = pick(PALETTE)
// The cursor label, and the token's display name: the dashboard's sessions view shows it.
const user: User = {
  name: query.get('name')?.trim().slice(0, 40) || `${hue.name} ${pick(ANIMALS)}`,
  color: hue.color,
}
const client = createClient({ url: wsUrl, crossTab: false, ...(await demoAuth(roomName, user.name)) })
const room = client.enter<DemoPresence>(roomName)
const shapes = room.map<ShapeMap>('shapes')
const history = room.history(shapes)
window.symphonyDemo = { room, shapes }
// The page's files, cached so a reload works offline (the document itself is in IndexedDB).
void navigator.serviceWorker?.register('./sw.js').catch(() => {})

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
const noticeEl = byId('notice')
const undoButton = byId<HTMLButtonElement>('undo')
const redoButton = byId<HTMLButtonElement>('redo')
const roomInput = byId<HTMLInputElement>('room-input')
roomInput.value = roomName

// Another room is another page: the URL says which, so it can be shared.
byId<HTMLFormElement>('room-form').addEventListener('submit', (e) => {
  e.preventDefault()
  const next = roomInput.value.trim()
  if (!isValidRoomName(next)) {
    roomInput.setCustomValidity(ROOM_NAME_RULE)
    roomInput.reportValidity()
    return
  }
  query.set('room', next)
  location.search = query.toString()
})
roomInput.addEventListener('input', () => roomInput.setCustomValidity(''))

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

const STATUS_TEXT: Record<RoomStatus, string> = {
  connecting: 'connecting…',
  connected: 'catching up…',
  synced: 'online',
  offline: 'offline',
  failed: 'stopped',
}
function renderStatus(): void {
  statusEl.textContent = STATUS_TEXT[room.status]
  statusEl.dataset.status = room.status
  statusEl.title =
    room.status === 'offline'
      ? 'Offline: edits are kept on this device and sync when the server is back'
      : (room.error?.message ?? '')
}
room.on('status', renderStatus)

function showNotice(error: SymphonyClientError): void {
  noticeEl.textContent = error.message
  noticeEl.dataset.code = error.code
  noticeEl.hidden = false
}
room.on('error', showNotice)
room.on('synced', () => {
  if (noticeEl.dataset.code !== 'READ_ONLY') noticeEl.hidden = true
})

// --- Undo / redo: only my own changes ----------------------------------------------------------

function renderHistory(): void {
  undoButton.disabled = !history.canUndo()
  redoButton.disabled = !history.canRedo()
}
history.subscribe(renderHistory)
undoButton.addEventListener('click', () => history.undo())
redoButton.addEventListener('click', () => history.redo())

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
  const id = `${Date.now().toString(36)}-${room.doc.clientID.toString(36)}-${(idCounter++).toString(36)}`
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
    room.transact(() => {
      shape.set('x', origin.x + dx)
      shape.set('y', origin.y + dy)
    })
    return
  }
  const { start } = gesture
  const box = { x: Math.min(start.x, p.x), y: Math.min(start.y, p.y), w: Math.abs(dx), h: Math.abs(dy) }
  const shape = gesture.id ? shapes.get(gesture.id) : undefined
  if (shape) {
    room.transact(() => {
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
  endGesture()
})
canvas.addEventListener('pointercancel', endGesture)

/** One gesture, one undo step, however many updates the drag produced. */
function endGesture(): void {
  gesture = null
  history.stopCapturing()
}
canvas.addEventListener('pointerleave', () => sendCursor(null))

window.addEventListener('keydown', (e) => {
  if (e.target instanceof HTMLInputElement) return
  const mod = e.ctrlKey || e.metaKey
  if (mod && e.key.toLowerCase() === 'z') {
    e.preventDefault()
    if (e.shiftKey) history.redo()
    else history.undo()
  } else if (mod && e.key.toLowerCase() === 'y') {
    e.preventDefault()
    history.redo()
  } else if ((e.key === 'Delete' || e.key === 'Backspace') && selectedId) {
    e.preventDefault()
    shapes.delete(selectedId) // renderShapes clears the selection
  } else if (e.key === 'Escape' && selectedId) {
    selectedId = null
    renderShapes()
  }
})

// --- Presence -----------------------------------------------------------------------------------

room.presence.set({ user, cursor: null })

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
      room.presence.set({ cursor: pendingCursor })
    },
    Math.max(0, lastCursorSent + CURSOR_INTERVAL - performance.now()),
  )
}

// Leave explicitly so peers drop our cursor at once; a page restored from the back/forward
// cache starts over.
window.addEventListener('pagehide', () => void client.destroy())
window.addEventListener('pageshow', (e) => {
  if (e.persisted) location.reload()
})

const cursors = new CursorLayer(cursorLayer)
function renderPresence(): void {
  const others = room.presence.others()
  peopleEl.textContent = String(others.length + 1)
  cursors.render(others)
}

// --- Wire up ------------------------------------------------------------------------------------

shapes.observeDeep(renderShapes)
room.presence.subscribe(renderPresence)
renderToolbar()
renderStatus()
renderHistory()
renderShapes()
renderPresence()
