import type { History, Room, SharedType } from '@symphony/client'
import { useEffect, useMemo, useRef, useState } from 'react'
import { useRoomContext } from './context.js'

export interface HistoryControls {
  undo(): void
  redo(): void
  canUndo: boolean
  canRedo: boolean
}

/**
 * Undo and redo of this user's own changes (never a peer's): anywhere in the room, or only in the
 * types `select` returns. `select` is read when the room is entered; the history lasts while the
 * component is mounted.
 *
 * @example
 * const { undo, canUndo } = useHistory()
 * <button disabled={!canUndo} onClick={undo}>Undo</button>
 * const drawing = useHistory((room) => [room.map('shapes'), room.text('title')])
 */
export function useHistory(select?: (room: Room<object>) => SharedType | SharedType[]): HistoryControls {
  const room = useRoomContext()
  const selectLatest = useRef(select)
  selectLatest.current = select
  const [history, setHistory] = useState<History | null>(null)
  const [stacks, setStacks] = useState({ canUndo: false, canRedo: false })
  useEffect(() => {
    if (!room) return
    const created = room.history(selectLatest.current?.(room))
    const read = () => setStacks({ canUndo: created.canUndo(), canRedo: created.canRedo() })
    const unsubscribe = created.subscribe(read)
    setHistory(created)
    read()
    return () => {
      unsubscribe()
      created.destroy()
      setHistory(null)
    }
  }, [room])
  return useMemo(
    () => ({
      undo: () => history?.undo(),
      redo: () => history?.redo(),
      canUndo: stacks.canUndo,
      canRedo: stacks.canRedo,
    }),
    [history, stacks],
  )
}
