import type { IntervalReport } from '../measurement/measures.js'
import type { WorkerSummary } from '../measurement/worker-summary.js'
import type { WorkerPlan } from './worker.js'

/** What coordinator and agents say to each other, one JSON object per WebSocket message. */
export type AgentMessage =
  | { type: 'hello'; agent: string }
  | { type: 'interval'; report: IntervalReport }
  | { type: 'done'; summary: WorkerSummary }
  | { type: 'failed'; error: string }

export type CoordinatorMessage = { type: 'run'; plan: WorkerPlan }

/** One message from the other side, or null for anything that is not JSON. */
export function parseMessage<M extends AgentMessage | CoordinatorMessage>(text: string): M | null {
  try {
    return JSON.parse(text) as M
  } catch {
    return null
  }
}

/** The default port a coordinator listens on and agents dial. */
export const COORDINATOR_PORT = 8700
