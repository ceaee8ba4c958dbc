/** Whether each room's replicas ended identical, checked by a fresh client after the run. */
export interface Convergence {
  rooms: number
  converged: number
  failures: { room: string; reason: string }[]
}

/** What one worker (the local process, or one agent) hands the collector when its rooms are done. */
export interface WorkerSummary {
  agent: string
  rooms: number
  users: number
  drops: { updates: number; presence: number }
  convergence: Convergence
  errors: string[]
  warnings: string[]
}
