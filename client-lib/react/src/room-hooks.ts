import type { EventSender, Room, RoomStatus, SymphonyClientError, SyncStatus } from '@symphony/client'
import { useCallback, useEffect, useRef } from 'react'
import { useRoomContext } from './context.js'
import { useRoomStore } from './room-store.js'
import { listenToErrors } from './shared-rooms.js'

/**
 * The room of the nearest `RoomProvider`, for writes and for anything the hooks do not cover;
 * null until it is entered (and during server rendering).
 *
 * @example
 * const room = useRoom()
 * const add = (text: string) => room?.list<string>('todos').push([text])
 */
export function useRoom<P extends object = Record<string, unknown>>(): Room<P> | null {
  return useRoomContext<P>()
}

/**
 * `'connecting'` (also before the room is entered, and in server rendering), `'connected'`,
 * `'synced'`, `'offline'` or `'failed'` (stopped for good: `useRoom()?.error` says why);
 * re-renders when it changes.
 *
 * @example
 * const status = useStatus()
 * return <span className={status}>{status}</span>
 */
export function useStatus(): RoomStatus {
  return useRoomStore(useRoomContext(), 'status', {
    subscribe: (room, changed) => room.on('status', changed),
    read: (room) => room.status,
    empty: 'connecting',
  })
}

/** Whether the room is caught up with the server now. */
export function useSynced(): boolean {
  return useStatus() === 'synced'
}

/**
 * `room.syncStatus`: `'synchronized'` once the room has synced and the server holds every edit
 * made here, else `'synchronizing'` (before the first sync, whatever stopped it, and while edits
 * wait for the server): for a "Saving…" badge.
 *
 * @example
 * const saving = useSyncStatus() === 'synchronizing'
 */
export function useSyncStatus(): SyncStatus {
  return useRoomStore(useRoomContext(), 'sync', {
    subscribe: (room, changed) => {
      const stops = [room.on('unsynced', changed), room.on('status', changed)]
      return () => {
        for (const stop of stops) stop()
      }
    },
    read: (room) => room.syncStatus,
    empty: 'synchronizing',
  })
}

/**
 * Calls `listener` with each error the room reports (a refused token, a final close, read-only
 * access…), including those reported before it mounted; the latest `listener` is used, so an
 * inline function is fine.
 *
 * @example
 * useErrorListener((error) => toast(error.message))
 */
export function useErrorListener(listener: (error: SymphonyClientError) => void): void {
  const room = useRoomContext()
  const latest = useRef(listener)
  latest.current = listener
  useEffect(() => (room ? listenToErrors(room, (error) => latest.current(error)) : undefined), [room])
}

/**
 * The function that sends an event (any JSON) to everyone else in the room (`room.broadcast`);
 * stable. Returns false when the room is not connected (the event is dropped).
 *
 * @example
 * const broadcast = useBroadcastEvent()
 * <button onClick={() => broadcast({ type: 'cheer' })}>🎉</button>
 */
export function useBroadcastEvent(): (data: unknown) => boolean {
  const room = useRoomContext()
  return useCallback((data: unknown) => room?.broadcast(data) ?? false, [room])
}

/**
 * Calls `listener` with each event another user broadcasts in the room, and who sent it (as
 * the server knows them from their token); the latest `listener` is used, so an inline function
 * is fine.
 *
 * @example
 * useEventListener((event, from) => { if (isCheer(event)) confetti(from?.name) })
 */
export function useEventListener(listener: (data: unknown, from: EventSender | null) => void): void {
  const room = useRoomContext()
  const latest = useRef(listener)
  latest.current = listener
  useEffect(() => room?.on('event', (data, from) => latest.current(data, from)), [room])
}
