import type { Ledger } from './ledger.js'
import { type TypingSettings, writeSession } from './writing-session.js'

export interface WriterSettings extends TypingSettings {
  /** Sessions under way at once (each of its loops starts the next session when one ends). */
  concurrency: number
  /** Pause between a loop's sessions. */
  pauseMs: number
}

export interface SessionWriterOptions extends WriterSettings {
  /** `ws://host:port` of the one server this writer talks to. */
  url: string
  room: string
  /** Unique in the run; prefixes its edit ids. */
  name: string
  ledger: Ledger
  /** A token for each session (a cluster with auth on): the writer is one user, its sessions its tabs. */
  tokenFor?: () => Promise<string>
}

/**
 * A user of one room on one server, working in short sessions (`writeSession`) one after another,
 * `concurrency` of them at a time.
 */
export class SessionWriter {
  #running = false
  #loop: Promise<void> = Promise.resolve()
  #sessions = 0
  readonly #stopping = new AbortController()

  constructor(private readonly options: SessionWriterOptions) {}

  start(): void {
    this.#running = true
    const loops = Array.from({ length: this.options.concurrency }, () => this.#run())
    this.#loop = Promise.all(loops).then(() => {})
  }

  /** Starts no more sessions; those under way have `graceMs` to be answered, then are abandoned. */
  async stop(graceMs: number): Promise<void> {
    this.#running = false
    const timer = setTimeout(() => this.#stopping.abort(), graceMs)
    await this.#loop
    clearTimeout(timer)
  }

  async #run(): Promise<void> {
    const { name, ledger, pauseMs } = this.options
    while (this.#running) {
      const token = await this.options.tokenFor?.()
      const end = await writeSession({
        ...this.options,
        ...(token ? { token } : {}),
        name: `${name}.${++this.#sessions}`,
        signal: this.#stopping.signal,
      })
      ledger.sessionEnded(end)
      if (this.#running) await new Promise((resolve) => setTimeout(resolve, pauseMs))
    }
  }
}
