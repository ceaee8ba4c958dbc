import type { Writable } from 'node:stream'

/**
 * Streams written to since the event loop last went idle. Each is corked on its first write and
 * uncorked once the current batch of input has been handled, so everything it is owed from that
 * batch leaves in a single syscall: the busier the server, the larger the batches. Used for the
 * clients' sockets and for the Redis publisher's.
 */
const corked = new Set<Writable>()

export function corkUntilTurnEnds(stream: Writable): void {
  if (corked.has(stream)) return
  if (corked.size === 0) setImmediate(uncorkAll)
  corked.add(stream)
  stream.cork()
}

function uncorkAll(): void {
  for (const stream of corked) stream.uncork()
  corked.clear()
}
