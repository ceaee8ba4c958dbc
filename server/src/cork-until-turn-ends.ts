/**
 * What leaves at the end of an event-loop turn. Streams written to since the loop last went idle
 * are corked on their first write and uncorked once the current batch of input has been handled,
 * so everything a stream is owed from that batch leaves in a single syscall: the busier the
 * server, the larger the batches. Used for the clients' sockets. Batches of Redis commands
 * (journal appends) are flushed first, before any client socket is uncorked: an update leaves
 * for the journal before anyone is sent it.
 */
const corked = new Set<Corkable>()
/** The journal's batches, flushed before the sockets. */
const flushes: (() => void)[] = []
let scheduled = false

/** A stream, or anything that holds writes until told to let them go (`WsTransport`). */
export interface Corkable {
  cork(): void
  uncork(): void
}

export function corkUntilTurnEnds(stream: Corkable): void {
  if (corked.has(stream)) return
  schedule()
  corked.add(stream)
  stream.cork()
}

/** Runs `flush` once the current turn's input is handled, before any corked stream is uncorked. */
export function flushAtTurnEnd(flush: () => void): void {
  schedule()
  flushes.push(flush)
}

function schedule(): void {
  if (scheduled) return
  scheduled = true
  setImmediate(endTurn)
}

function endTurn(): void {
  scheduled = false
  // Taken out first: a flush may schedule the next turn's work.
  for (const flush of flushes.splice(0)) {
    // A flush reports its own failures; one that throws anyway must not leave the turn's other
    // batches unsent and every client socket corked.
    try {
      flush()
    } catch (error) {
      process.emitWarning(error as Error)
    }
  }
  // Taken out first too: a stream written to while the others are uncorked is corked anew.
  const due = [...corked]
  corked.clear()
  for (const stream of due) {
    // As a flush: one stream that throws must not leave the others holding their frames.
    try {
      stream.uncork()
    } catch (error) {
      process.emitWarning(error as Error)
    }
  }
}
