import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { it } from 'node:test'
import { fileURLToPath } from 'node:url'

const PACKAGE = fileURLToPath(new URL('..', import.meta.url))

/**
 * Server rendering as a framework does it, in a Node process without `window`, `document`,
 * `indexedDB`, `localStorage`, `WebSocket` or `BroadcastChannel`, where using one throws a
 * ReferenceError (looking whether it exists, with typeof, is fine): importing the packages,
 * making a client (or the provider making one) and rendering a room's tree must not, none of them appears, and the hooks give
 * their empty values.
 */
const BROWSER_GLOBALS = ['window', 'document', 'indexedDB', 'localStorage', 'WebSocket', 'BroadcastChannel']
const SCRIPT = `
const names = ${JSON.stringify(BROWSER_GLOBALS)}
for (const name of names) delete globalThis[name]
const { createElement: h } = await import('react')
const { renderToString } = await import('react-dom/server')
const { createClient } = await import('@symphony/client')
const s = await import('@symphony/react')
const client = createClient({ url: 'wss://sync.example.com', getToken: async () => 'token' })
function View() {
  const todos = s.useList('todos')
  const settings = s.useMap('settings')
  const title = s.useText('title')
  const others = s.useOthers()
  const [me] = s.useMyPresence()
  const { canUndo } = s.useHistory((room) => room.list('todos'))
  s.useErrorListener(() => {})
  return h('p', null, [s.useStatus(), s.useSynced(), s.useSyncStatus(), todos.length, Object.keys(settings).length,
    JSON.stringify(title), others.length, String(me), String(canUndo), String(s.useRoom())].join(' '))
}
const room = h(s.RoomProvider, { id: 'doc', initialPresence: { name: 'Ada' } }, h(View))
const html = renderToString(h(s.SymphonyProvider, { client }, room))
// The provider making its client from the options renders the same.
const fromOptions = renderToString(h(s.SymphonyProvider, { url: 'wss://sync.example.com', getToken: async () => 'token' }, room))
if (fromOptions !== html) throw new Error('from options: ' + fromOptions)
const appeared = names.filter((name) => typeof globalThis[name] !== 'undefined')
if (appeared.length > 0) throw new Error('defined on the server: ' + appeared.join(', '))
process.stdout.write(html)
`

it('imports, makes a client and renders a room on the server without touching browser globals', () => {
  const html = execFileSync(process.execPath, ['--input-type=module', '-e', SCRIPT], {
    cwd: PACKAGE,
    encoding: 'utf8',
  })
  assert.equal(html, '<p>connecting false synchronizing 0 0 &quot;&quot; 0 null false null</p>')
})
