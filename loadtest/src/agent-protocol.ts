import type { IntervalReport } from './measures.js'
import type { WorkerPlan, WorkerSummary } from './worker.js'

/** What coordinator and agents say to each other, one JSON object per WebSocket message. */
export type AgentMessage =
  | { type: 'hello'; agent: string }
  | { type: 'interval'; report: IntervalReport }
  | { type: 'done'; summary: WorkerSummary }
  | { type: 'failed'; error: string }

export type CoordinatorMessage = { type: 'run'; plan: WorkerPlan }

/** The default port a coordinator listens on and agents dial. */
export const COORDINATOR_PORT = 8700
