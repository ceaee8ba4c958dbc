import type { Dependency, DependencyOutcomes } from './ports/dependency-outcomes.js'

/** One dependency's state in `/healthz`. */
export interface DependencyState {
  ok: boolean
  /**
   * The latest failure, while failing: its action and error code (`append: ECONNREFUSED`), never
   * its message, which may name hosts, accounts or roles and `/healthz` is public. Logs have the rest.
   */
  error?: string
  /** When the current state began (ISO time); absent while it never changed since start. */
  since?: string
}

const DEPENDENCIES: readonly Dependency[] = ['registry', 'snapshots', 'journal', 'metadata']

/**
 * Each dependency's health from the latest outcome of real operations: failing from its latest
 * error until an operation succeeds again. Embedded adapters never fail, so they stay ok.
 */
export class DependencyHealth implements DependencyOutcomes {
  readonly #states = new Map<Dependency, DependencyState>(DEPENDENCIES.map((d) => [d, { ok: true }]))

  constructor(private readonly onError: (dependency: Dependency, action: string) => void = () => {}) {}

  failed(dependency: Dependency, action: string, error: unknown): void {
    this.onError(dependency, action)
    const state = this.#states.get(dependency) as DependencyState
    const message = `${action}: ${errorCode(error)}`
    if (state.ok) this.#states.set(dependency, { ok: false, error: message, since: new Date().toISOString() })
    else state.error = message
  }

  succeeded(dependency: Dependency): void {
    if (this.#states.get(dependency)?.ok) return
    this.#states.set(dependency, { ok: true, since: new Date().toISOString() })
  }

  /** Every dependency's state, for `/healthz`. */
  report(): Record<Dependency, DependencyState> {
    return Object.fromEntries([...this.#states].map(([d, state]) => [d, { ...state }])) as Record<
      Dependency,
      DependencyState
    >
  }
}

/** A short, fixed-alphabet name for an error: its `code` (ECONNREFUSED) or class name (AccessDeniedException). */
function errorCode(error: unknown): string {
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown }
  const candidate = typeof code === 'string' ? code : typeof name === 'string' ? name : 'Error'
  return /^[A-Za-z0-9_.-]{1,64}$/.test(candidate) ? candidate : 'Error'
}
