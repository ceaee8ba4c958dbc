// The React example served at /react by `npm start`: a shared to-do list with presence, built on
// @symphony/react. Open it in two windows. With `AUTH_SECRET=… npm start` it gets its tokens from
// the development token route, as the whiteboard does (an app asks its own backend).
import { createClient } from '@symphony/client'
import {
  RoomProvider,
  SymphonyProvider,
  useHistory,
  useList,
  useOthers,
  useRoom,
  useStatus,
  useSyncStatus,
} from '@symphony/react'
import { type FormEvent, StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { demoAuth } from '../demo/dev-token.js'

type Presence = { name: string }

const query = new URLSearchParams(location.search)
const roomId = query.get('room') || 'react-todos'
const name = query.get('name') || `Guest ${Math.floor(Math.random() * 1000)}`
const url = `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}`

function TodoList() {
  const room = useRoom()
  const todos = useList<string>('todos')
  const others = useOthers<Presence, string[]>((people) => people.map((person) => String(person.name)))
  const status = useStatus()
  const saving = useSyncStatus() === 'synchronizing'
  const { undo, canUndo } = useHistory()
  const add = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    const input = event.currentTarget.elements.namedItem('todo') as HTMLInputElement
    if (input.value.trim()) room?.list<string>('todos').push([input.value.trim()])
    input.value = ''
  }
  return (
    <main>
      <h1>To-do, together</h1>
      <p id="status" data-status={status}>
        {status}
        {saving ? ' · saving…' : ''}
      </p>
      <p id="people">{others.length > 0 ? `Also here: ${others.join(', ')}` : 'Nobody else is here yet'}</p>
      <form onSubmit={add}>
        <input name="todo" placeholder="What needs doing?" aria-label="New to-do" />
        <button type="submit">Add</button>
        <button type="button" disabled={!canUndo} onClick={undo}>
          Undo
        </button>
      </form>
      <ul id="todos">
        {todos.map((todo, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: items have no ids; the list is short
          <li key={i}>{todo}</li>
        ))}
      </ul>
    </main>
  )
}

const client = createClient({ url, ...(await demoAuth(roomId, name)) })
createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <SymphonyProvider client={client}>
      <RoomProvider id={roomId} initialPresence={{ name }}>
        <TodoList />
      </RoomProvider>
    </SymphonyProvider>
  </StrictMode>,
)
