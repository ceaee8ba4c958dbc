/**
 * @symphony/react: React bindings for `@symphony/client`. A `SymphonyProvider` holds the client, a
 * `RoomProvider` enters a room, and hooks read it: shared types, presence, status, undo.
 *
 * @example
 * <SymphonyProvider client={client}>
 *   <RoomProvider id="todos"><TodoList /></RoomProvider>
 * </SymphonyProvider>
 */
export { type HistoryControls, useHistory } from './history-hook.js'
export { useMyPresence, useOthers, useUpdateMyPresence } from './presence-hooks.js'
export {
  RoomProvider,
  type RoomProviderProps,
  SymphonyProvider,
  type SymphonyProviderProps,
} from './providers.js'
export {
  useBroadcastEvent,
  useErrorListener,
  useEventListener,
  useRoom,
  useStatus,
  useSynced,
  useSyncStatus,
} from './room-hooks.js'
export { shallow } from './room-store.js'
export { useList, useMap, useText } from './shared-type-hooks.js'
