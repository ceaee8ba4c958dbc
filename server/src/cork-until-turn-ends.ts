import type { Writable } from 'node:stream'

/**
 * What leaves at the end of an event-loop turn. Streams written to since the loop last went idle
 * are corked on their first write and uncorked once the current batch of input has been handled,
 * so everything a stream is owed from that batch leaves in a single syscall: the busier the
 * server, the larger the batches. Used for the clients' sockets. Batches of Redis commands
 * (journal appends, then publishes) are flushed first, in that order, before any client socket
 * is uncorked: an update leaves for the journal before anyone is sent it.
 */
const corked = new Set<Writable>()
/** `flushes[0]`: the journal's; `flushes[1]`: the publishers'. */
const flushes: [(() => void)[], (() => void)[]] = [[], []]
let scheduled = false

/** When a batch is flushed: the journal's first, then what is published, then the sockets. */
export type TurnStage = 'journal' | 'publish'

export function corkUntilTurnEnds(stream: Writable): void {
  if (corked.has(stream)) return
  schedule()
  corked.add(stream)
  stream.cork()
}

/** Runs `flush` once the current turn's input is handled, before any corked stream is uncorked. */
export function flushAtTurnEnd(stage: TurnStage, flush: () => void): void {
  schedule()
  flushes[stage === 'journal' ? 0 : 1].push(flush)
}

function schedule(): void {
  if (scheduled) return
  scheduled = true
  setImmediate(endTurn)
}

function endTurn(): void {
  scheduled = false
  for (const stage of flushes) {
    // Taken out first: a flush may schedule the next turn's work.
    const due = stage.splice(0)
    for (const flush of due) {
      // A flush reports its own failures; one that throws anyway must not leave the turn's other
      // batches unsent and every client socket corked.
      try {
        flush()
      } catch (error) {
        process.emitWarning(error as Error)
      }
    }
  }
  for (const stream of corked) stream.uncork()
  corked.clear()
}
