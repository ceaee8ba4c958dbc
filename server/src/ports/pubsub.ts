/** Receives a message another server published for a room. */
export type RoomMessageHandler = (message: Uint8Array) => void

/**
 * Fan-out between servers holding the same room. Messages are y-websocket frames, published
 * once per local update; an adapter never delivers a server's own messages back to it.
 */
export interface PubSub {
  /** Starts delivery for `room`; resolves once messages published afterwards will arrive. */
  subscribe(room: string, handler: RoomMessageHandler): Promise<void>
  unsubscribe(room: string): Promise<void>
  publish(room: string, message: Uint8Array): void
  /**
   * False when the adapter knows no other server subscribes to `room` (the embedded bus), or has
   * learnt so and heard from no other server on it since (Redis: see `ChannelPeers`): then work
   * done only for peers, such as anti-entropy digests, can be skipped, and the adapter may drop
   * what is published to the room. So a server that subscribes to a room publishes once it has
   * loaded it (its digest): a server holding the room alone hears it, and publishes again.
   */
  mayHavePeers(room: string): boolean
  close(): Promise<void>
  /**
   * Optional: calls `listener` whenever messages may have been missed (the adapter subscribed
   * again after losing its link). Updates heal by anti-entropy; the core checks every room it
   * holds for a deletion it was not told of. A deletion notice the adapter could not send is its
   * own to send again until it goes through.
   */
  onPossibleLoss?(listener: () => void): void
}
