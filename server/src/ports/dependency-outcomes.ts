/** The services a server depends on, each with a real adapter and an embedded one. */
export type Dependency = 'registry' | 'snapshots' | 'journal' | 'metadata'

/**
 * How operations on the dependencies turn out, reported by the adapters and the core as they
 * happen: `/healthz` names a failing dependency and `/metrics` counts the errors from this.
 */
export interface DependencyOutcomes {
  /** An operation failed. `action` is one of a fixed set per dependency (a metric label). */
  failed(dependency: Dependency, action: string, error: unknown): void
  /** An operation succeeded: the dependency answers. Cheap when it already was fine. */
  succeeded(dependency: Dependency): void
}

/** For adapters used without a server to tell (scripts, tests of an adapter alone). */
export const IGNORED_OUTCOMES: DependencyOutcomes = {
  failed() {},
  succeeded() {},
}
