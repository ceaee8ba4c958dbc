import { Redis } from 'ioredis'
import type { Logger } from '../logger.js'
import type { Dependency, DependencyOutcomes } from '../ports/dependency-outcomes.js'
import { Heartbeat, withinDeadline } from './link-heartbeat.js'
import {
  closeConnection,
  openRedisConnection,
  type RedisConnection,
  type RedisLinkSettings,
} from './redis-connection.js'

export interface RedisLinkOptions<C extends RedisConnection> {
  url: string
  /** The dependency it serves (`journal`): in logs, and what its failures and proofs report to. */
  role: Dependency
  /** The connection's name in CLIENT LIST, such as `<serverId>:journal`. */
  name: string
  settings: RedisLinkSettings
  outcomes: DependencyOutcomes
  logger: Logger
  /** A cluster client (`url` names the cluster's configuration endpoint). */
  cluster?: boolean
  /** What proves the link each heartbeat (a PING). */
  prove: (connection: C) => Promise<unknown>
  /** Prepares each new connection (commands, listeners). */
  setup?: (connection: C) => void
  /** The connection is ready: after it connects, and after each reconnection. */
  onReady?: (connection: C) => void
}

/**
 * One Redis connection whose state is what its heartbeat proves, not what ioredis reports: a
 * missed heartbeat declares it down and replaces the connection with a new one, whatever ioredis
 * believes (a half-open socket looks ready).
 */
export class RedisLink<C extends RedisConnection = Redis> {
  #connection: C
  #down = false
  #closed = false
  readonly #heartbeat: Heartbeat

  constructor(private readonly options: RedisLinkOptions<C>) {
    this.#connection = this.#open()
    const { heartbeatIntervalMs, heartbeatTimeoutMs } = options.settings
    this.#heartbeat = new Heartbeat(heartbeatIntervalMs, () =>
      withinDeadline(
        options.prove(this.#connection),
        heartbeatTimeoutMs,
        `the heartbeat of the ${options.role} connection`,
      ).then(
        () => this.proven(),
        (error: unknown) => this.missed(error),
      ),
    )
  }

  /** The connection now: read it for each command, as a missed heartbeat replaces it. */
  get connection(): C {
    return this.#connection
  }

  /** Runs a command; if a missed heartbeat replaced the connection meanwhile, again on the new one. */
  async run<T>(command: (connection: C) => Promise<T>): Promise<T> {
    const connection = this.#connection
    try {
      return await command(connection)
    } catch (error) {
      if (connection === this.#connection || this.#closed) throw error
      return command(this.#connection)
    }
  }

  /** The heartbeat got through: the link is up. */
  proven(): void {
    if (this.#closed) return
    if (this.#down)
      this.options.logger.info({ role: this.options.role }, 'redis link proven by its heartbeat')
    this.#down = false
    this.options.outcomes.succeeded(this.options.role)
  }

  /** The heartbeat did not get through: the link is down, and its connection is replaced. */
  missed(error: unknown): void {
    if (this.#closed) return
    const { role, logger, outcomes } = this.options
    this.#down = true
    outcomes.failed(role, 'heartbeat', error)
    logger.warn({ err: error, role }, 'redis link missed its heartbeat; reopening its connection')
    const old = this.#connection
    this.#connection = this.#open()
    old.disconnect()
    // Its waiting commands fail now, rather than once a FIN sent into a dead link times out.
    if (old instanceof Redis) old.stream?.destroy()
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#heartbeat.stop()
    await closeConnection(this.#connection)
  }

  #open(): C {
    const { url, role, name, settings, cluster, outcomes, logger } = this.options
    const connection = openRedisConnection(url, { name, settings, cluster }) as C
    this.options.setup?.(connection)
    // A replaced connection may still report its end: only the current one speaks for the link.
    const current = () => connection === this.#connection && !this.#closed
    let reconnecting = false
    connection.on('error', (error: Error) => {
      if (!current()) return
      this.#down = true
      outcomes.failed(role, 'connection', error)
      logger.error({ err: error, role }, 'redis connection error')
    })
    connection.on('reconnecting', (delayMs: number) => {
      if (!current()) return
      reconnecting = true
      this.#down = true
      outcomes.failed(role, 'disconnect', new Error(`the ${role} connection to Redis was lost`))
      logger.warn({ role, delayMs }, 'redis connection lost, reconnecting')
    })
    connection.on('ready', () => {
      if (!current()) return
      if (reconnecting) logger.warn({ role }, 'redis connection restored')
      reconnecting = false
      this.options.onReady?.(connection)
    })
    return connection
  }
}
