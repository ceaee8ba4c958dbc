import * as Y from 'yjs'
import { Measures } from '../measurement/measures.js'
import { RoomObserver } from '../measurement/observer.js'
import { LightUser } from './light-user.js'
import { RealClientUser } from './real-user.js'
import { documentContent } from './records.js'
import type { UserSetup, VirtualUser } from './virtual-user.js'
import type { Protocol } from './wire.js'
import type { Workload } from './workloads.js'

export interface RoomPlan {
  name: string
  /** The run-wide number of this room's first user; the others follow. */
  firstUser: number
  /**
   * Signed by whoever planned the run: one per user, in order, then one for the convergence check.
   * Unset when the server runs without auth.
   */
  tokens?: string[]
}

/** How a run's users are placed on its servers (`--placement`). */
export const PLACEMENTS = ['spread', 'room'] as const
export type Placement = (typeof PLACEMENTS)[number]

export interface RoomSettings {
  /** A room's users connect to these in turn (each room starting one further), so each room spans them. */
  serverUrls: string[]
  /** `room`: every user of the room on one server instead, the rooms taking the servers in turn. */
  placement?: Placement | undefined
  workload: Workload
  realClients: boolean
  protocol: Protocol
  measures: Measures
}

interface Member {
  user: VirtualUser
  number: number
  updatesSent: number
  presenceSent: number
  timers: NodeJS.Timeout[]
}

/**
 * One room: its observer joins first (so it sees every edit from the start), then the others; each
 * user edits and moves its cursor at the workload's rates until `stopSending`.
 */
export class RoomRun {
  readonly #members: Member[] = []
  readonly #observer: RoomObserver
  readonly #observerNumber: number
  #observerUser: VirtualUser | null = null
  #sending = true

  constructor(
    readonly plan: RoomPlan,
    private readonly settings: RoomSettings,
  ) {
    this.#observerNumber = plan.firstUser + settings.workload.perRoom - 1
    this.#observer = new RoomObserver(settings.measures, this.#observerNumber)
  }

  get connectedUsers(): number {
    return this.#members.length
  }

  onObservedUpdate(listener: () => void): void {
    this.#observer.onUpdate(listener)
  }

  async start(): Promise<void> {
    const observer = await this.#join(this.#observerNumber, true)
    if (!observer) return
    const others = Array.from({ length: this.settings.workload.perRoom - 1 }, (_, i) =>
      this.#join(this.plan.firstUser + i, false),
    )
    await Promise.all(others)
  }

  stopSending(): void {
    this.#sending = false
    for (const member of this.#members) for (const timer of member.timers) clearInterval(timer)
  }

  /** Edits sent by others that the observer has not seen yet. */
  outstandingUpdates(): number {
    return this.#othersSum((m) => m.updatesSent - this.#observer.updatesFrom(m.number))
  }

  drops(): { updates: number; presence: number } {
    return {
      updates: this.outstandingUpdates(),
      presence: this.#othersSum((m) => m.presenceSent - this.#observer.presenceFrom(m.user.clientId)),
    }
  }

  /** Joins a fresh client and compares what it syncs with the observer's replica; null when equal. */
  async divergence(): Promise<string | null> {
    const observerDoc = this.#observerUser?.doc
    if (!observerDoc) return 'the observer never synced'
    const setup = this.#setup(this.#observerNumber + 1, false)
    // Its own measures: the check's connection is not part of the load.
    const fresh = new LightUser({ ...setup, measures: new Measures(), replica: true })
    try {
      await fresh.connect()
    } catch (error) {
      return `a fresh client could not join: ${(error as Error).message}`
    }
    try {
      const vectors = [observerDoc, fresh.doc].map((doc) => stateVector(doc))
      if (vectors[0] !== vectors[1])
        return `state vectors differ: observer ${vectors[0]}, fresh client ${vectors[1]}`
      if (documentContent(observerDoc) !== documentContent(fresh.doc)) return 'contents differ'
    } finally {
      await fresh.close()
    }
    return null
  }

  async close(): Promise<void> {
    this.stopSending()
    await Promise.all(this.#members.map((m) => m.user.close()))
  }

  async #join(number: number, isObserver: boolean): Promise<VirtualUser | null> {
    const setup = this.#setup(number, isObserver)
    const user: VirtualUser = this.settings.realClients ? new RealClientUser(setup) : new LightUser(setup)
    try {
      await user.connect()
    } catch {
      await user.close()
      return null // counted as a connect error by the user
    }
    if (isObserver) this.#observerUser = user
    const member: Member = { user, number, updatesSent: 0, presenceSent: 0, timers: [] }
    this.#members.push(member)
    if (this.#sending) this.#schedule(member)
    return user
  }

  #setup(number: number, isObserver: boolean): UserSetup {
    const { serverUrls, workload, measures, placement } = this.settings
    // Spread: member i of room k on server k + i, so each room spans the servers and the rooms'
    // owners (the server its first joiner, the observer, reaches) take the servers in turn, as
    // behind a load balancer. Before, every room's observer landed on the first server, which
    // owned every room. Room: every member of room k on server k.
    const room = Math.floor(this.plan.firstUser / workload.perRoom)
    const turn = placement === 'room' ? room : room + number - this.plan.firstUser
    return {
      serverUrl: serverUrls[turn % serverUrls.length] as string,
      room: this.plan.name,
      token: this.plan.tokens?.[number - this.plan.firstUser],
      edit: workload.edit,
      protocol: this.settings.protocol,
      measures,
      ...(isObserver ? { observer: this.#observer } : {}),
    }
  }

  #schedule(member: Member): void {
    const { workload, measures } = this.settings
    const writes = workload.writers === 'all' || member.number === this.plan.firstUser
    const every = (perSecond: number, action: () => void) => {
      if (perSecond <= 0) return
      const period = 1000 / perSecond
      // A random phase, so a room's users do not all send in the same millisecond.
      const start = setTimeout(() => {
        if (!this.#sending) return
        action()
        member.timers.push(setInterval(action, period))
      }, Math.random() * period)
      member.timers.push(start)
    }
    if (writes) {
      every(workload.docRate, () => {
        const s = ++member.updatesSent
        member.user.edit({ u: member.number, s, t: performance.now(), x: s % 1000, y: member.number % 1000 })
        measures.count('updatesSent')
      })
    }
    every(workload.presenceRate, () => {
      const s = ++member.presenceSent
      const cursor = { x: (s * 7) % 1000, y: (s * 13) % 1000 }
      member.user.setPresence({ name: `user-${member.number}`, cursor, s, t: performance.now() })
      measures.count('presenceSent')
    })
  }

  #othersSum(value: (member: Member) => number): number {
    let sum = 0
    for (const member of this.#members) if (member.user !== this.#observerUser) sum += value(member)
    return sum
  }
}

function stateVector(doc: Y.Doc): string {
  const entries = [...Y.decodeStateVector(Y.encodeStateVector(doc))].sort(([a], [b]) => a - b)
  return entries.map(([client, clock]) => `${client}:${clock}`).join(',')
}
