import { setImmediate as nextTurn } from 'node:timers/promises'

/**
 * Waits, one event-loop turn at a time, until `check` holds. The in-memory adapters settle within
 * a few turns, so this waits for an event to have happened, not for time to pass; it fails after
 * `maxTurns` rather than hanging. (Fake timers leave `setImmediate` real.)
 */
export async function until(check: () => boolean, what: string, maxTurns = 200): Promise<void> {
  for (let turn = 0; !check(); turn++) {
    if (turn >= maxTurns) throw new Error(`still not the case after ${maxTurns} turns: ${what}`)
    await nextTurn()
  }
}

/** Lets everything already queued (promises, timers due now) run to its end. */
export async function settle(turns = 10): Promise<void> {
  for (let turn = 0; turn < turns; turn++) await nextTurn()
}
