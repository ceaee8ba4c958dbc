/**
 * Worker thread behind `restoreOnWorker`: makes one restore update (`restoreUpdate`), which reads
 * the live state and the version into documents of their own, off the main thread.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { restoreUpdate } from '../protocol/restore-update.js'

export interface RestoreRequest {
  live: Uint8Array
  version: Uint8Array
}
export type RestoreReply = { update: Uint8Array } | { error: { code: string | undefined; message: string } }

const { live, version } = workerData as RestoreRequest
try {
  const update = restoreUpdate(live, version)
  parentPort?.postMessage({ update } satisfies RestoreReply, [update.buffer as ArrayBuffer])
} catch (error) {
  const { code, message } = error as { code?: string; message: string }
  parentPort?.postMessage({ error: { code, message } } satisfies RestoreReply)
}
