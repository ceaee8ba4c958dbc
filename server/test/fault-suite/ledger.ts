/** One edit a writer made: its room, its session's start, and when (if ever) the server acknowledged it. */
export interface EditRecord {
  room: string
  /** `performance.now()` when its session began connecting. */
  sessionStartedAt: number
  /** `performance.now()` when the session's sync-status answer arrived; null if it never did. */
  ackedAt: number | null
}

/** A sync-status answer, as the writer's session received it. */
export interface Acknowledgement {
  /** `ws://host:port` of the server that answered. */
  url: string
  room: string
  /** The edits it acknowledged, oldest first. */
  ids: string[]
  /** `performance.now()` when the answer arrived. */
  at: number
  /** `performance.now()` when the newest of `ids` was sent: the server published it after this. */
  newestSentAt: number
}

/** How a session ended: every edit answered, given up with edits unanswered, or given up before its first edit. */
export type SessionEnd = 'answered' | 'abandoned' | 'unstarted'

/** A REST deletion: sent at `startedAt`, answered at `endedAt` (Infinity if never), `ok` on 2xx. */
export interface DeleteRecord {
  room: string
  startedAt: number
  endedAt: number
  ok: boolean
  /** The status code, or why there was none. */
  outcome: string
}

/**
 * What the writers and the deleter did, on the test process's clock: the ground truth the checker
 * compares the servers' documents with. Edit ids are unique in the run.
 */
export class Ledger {
  readonly edits = new Map<string, EditRecord>()
  /** performance.now() when the writers started: the time zero of the report. */
  origin = performance.now()
  readonly deletes: DeleteRecord[] = []
  /** How the writers' sessions ended (see `SessionEnd`). */
  readonly sessions: Record<SessionEnd, number> = { answered: 0, abandoned: 0, unstarted: 0 }
  readonly #acknowledgementListeners = new Set<(acknowledgement: Acknowledgement) => void>()

  made(id: string, room: string, sessionStartedAt: number): void {
    if (this.edits.has(id)) throw new Error(`edit id ${id} used twice`)
    this.edits.set(id, { room, sessionStartedAt, ackedAt: null })
  }

  acknowledged(acknowledgement: Acknowledgement): void {
    for (const id of acknowledgement.ids) {
      const edit = this.edits.get(id)
      if (edit) edit.ackedAt = acknowledgement.at
    }
    for (const listener of this.#acknowledgementListeners) listener(acknowledgement)
  }

  /**
   * Calls `listener` with each acknowledgement as it arrives: synchronously, in the session's
   * message handler, so what it does comes before anything else the test process runs. Returns
   * its removal.
   */
  onAcknowledgement(listener: (acknowledgement: Acknowledgement) => void): () => void {
    this.#acknowledgementListeners.add(listener)
    return () => this.#acknowledgementListeners.delete(listener)
  }

  sessionEnded(end: SessionEnd): void {
    this.sessions[end]++
  }

  deleted(record: DeleteRecord): void {
    this.deletes.push(record)
  }

  /** `at` as seconds since the writers started, for the report. */
  since(at: number): string {
    return Number.isFinite(at) ? `${((at - this.origin) / 1000).toFixed(1)} s` : 'never'
  }
}
