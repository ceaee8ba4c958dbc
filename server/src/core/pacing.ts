import { setTimeout as delay, setImmediate as nextTurn } from 'node:timers/promises'
import { LRUCache } from 'lru-cache'

/**
 * How users are paced, server-wide: how soon one refused as busy may come back (`RetryLater`),
 * how fast one's edits may build (`BuildPace`). Each remembers this many users at once, the
 * least recent forgotten first (they may come back at once, or build a burst again).
 */
const REMEMBERED = 10_000

/** The first wait of a client refused as busy, doubled while it comes back refused, up to the last. */
const FIRST_WAIT_S = 1
const LONGEST_WAIT_S = 8

interface Wait {
  /** `performance.now()` until which it waits. */
  until: number
  seconds: number
}

/**
 * Who was just refused as busy (`ServerBusyError`, 1013: mostly for want of memory, a room that
 * cannot load or a writer's big edit): until their wait is over they are turned away at the door
 * (503 with `Retry-After`), once their token is checked and before the upgrade, the room or their
 * frames cost anything. A client that came back at once had the server read a 20 MB room, or
 * receive a 16 MB edit, again and again only to refuse it (issue 47's attack: 140 refusals a
 * second). Each refusal while the last wait is remembered doubles the next one; y-websocket backs
 * off on a refused upgrade, where after a closed socket it came back in 100 ms.
 */
export class RetryLater {
  readonly #waits = new LRUCache<string, Wait>({ max: REMEMBERED })

  /** `key` was refused as busy just now. */
  refused(key: string, now = performance.now()): void {
    const last = this.#waits.get(key)
    const seconds = last ? Math.min(LONGEST_WAIT_S, last.seconds * 2) : FIRST_WAIT_S
    // Kept for one more wait after this one: a refusal then counts as coming back refused.
    this.#waits.set(key, { until: now + seconds * 1000, seconds }, { ttl: 2 * seconds * 1000 })
  }

  /** Whole seconds `key` still has to wait (0: none). */
  secondsLeft(key: string, now = performance.now()): number {
    const wait = this.#waits.get(key)
    return wait && wait.until > now ? Math.ceil(Math.round(wait.until - now) / 1000) : 0
  }
}

/** The key of a room that could not load: everyone waits, the room does not fit. */
export const roomKey = (room: string) => `room\n${room}`
/** The key of a user refused in `room` (an edit refused, a socket shed): only they wait. */
export const userKey = (heldBy: string, room: string) => `user\n${heldBy}\n${room}`

const MiB = 1024 * 1024
/**
 * What one user's edits may build on the server's heap per second, on average, across its
 * connections and rooms (`contentCostOf`'s `builtBytes`; typing builds a few hundred bytes an
 * edit), and in one burst. Fixed, not a setting: a writer past it is slowed, never refused.
 */
export const BUILT_BYTES_PER_SECOND = 16 * MiB
export const BUILT_BYTES_BURST = 8 * MiB

interface Debt {
  bytes: number
  /** `performance.now()` when it was last counted. */
  at: number
}

/**
 * Paces each user's building: what their edits build is a debt paid off at
 * `BUILT_BYTES_PER_SECOND`; past `BUILT_BYTES_BURST` owed, their next writes wait until it is
 * paid down to it. One writer of many small updates each building megabytes (200 KB of `{}`
 * builds 6.5 MB) otherwise kept the event loop and the collector busy for every room: issue 47's
 * bystanders waited 300 ms behind 40 such updates in a row. The budget bounds what it may hold;
 * this bounds how fast it may grow it.
 */
export class BuildPace {
  readonly #debts = new LRUCache<string, Debt>({ max: REMEMBERED })

  constructor(
    private readonly bytesPerSecond = BUILT_BYTES_PER_SECOND,
    private readonly burst = BUILT_BYTES_BURST,
  ) {}

  /** `user` built `bytes` just now: how many milliseconds its next writes wait (0: none). */
  built(user: string, bytes: number, now = performance.now()): number {
    const last = this.#debts.get(user)
    const paid = last ? ((now - last.at) / 1000) * this.bytesPerSecond : 0
    const owed = Math.max(0, (last?.bytes ?? 0) - paid) + bytes
    const paidOffInMs = (owed / this.bytesPerSecond) * 1000
    if (paidOffInMs >= 1) this.#debts.set(user, { bytes: owed, at: now }, { ttl: Math.ceil(paidOffInMs) })
    else this.#debts.delete(user)
    return owed > this.burst ? ((owed - this.burst) / this.bytesPerSecond) * 1000 : 0
  }
}

/**
 * A writer's update that builds more than this on the heap (`contentCostOf`'s `builtBytes`: about
 * half a millisecond of work, and garbage to collect) ends its writer's event-loop turn.
 */
const TURN_BUILT_BYTES = 256 * 1024

/**
 * What a writer's next frames wait for once its update (`applying`, if it is not applied yet)
 * built `builtBytes`: the writer's pace (`BuildPace`) when it builds too fast; else, for one that
 * built much (200 KB of `{}` builds 6.5 MB), the next event-loop turn, so the other rooms'
 * messages are read between; else nothing more.
 */
export function afterBuilding(
  pace: Pick<BuildPace, 'built'> | null,
  pacedAs: string | undefined,
  builtBytes: number,
  applying?: Promise<void>,
): Promise<void> | undefined {
  const waitMs = pacedAs ? (pace?.built(pacedAs, builtBytes) ?? 0) : 0
  if (waitMs === 0 && builtBytes <= TURN_BUILT_BYTES) return applying
  const wait = () => (waitMs > 0 ? delay(waitMs, undefined, { ref: false }) : nextTurn()).then(() => {})
  return applying ? applying.then(wait) : wait()
}
