/** A server that holds a room right now, and where to fetch the room's state from it. */
export interface PeerServer {
  serverId: string
  /** `host:port` of the server's internal endpoint. */
  internalAddress: string
}

/**
 * Which servers hold which rooms. Entries are leases: the adapter refreshes this server's own
 * leases while they are registered, and reads ignore leases that have expired (a crashed server
 * stops being offered as a peer within one lease).
 */
export interface RoomRegistry {
  register(room: string): Promise<void>
  deregister(room: string): Promise<void>
  /** Live servers holding `room`, this server excluded. */
  peersFor(room: string): Promise<PeerServer[]>
  close(): Promise<void>
}
