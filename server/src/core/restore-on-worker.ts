import { Worker } from 'node:worker_threads'
import { RestoreMismatchError, restoreUpdate } from '../protocol/restore-update.js'
import type { RestoreReply, RestoreRequest } from './restore-worker.js'

/** Run from TypeScript source (the tests, under tsx), a worker cannot load the .ts entry: it runs here. */
const FROM_SOURCE = import.meta.url.endsWith('.ts')

/**
 * `restoreUpdate` on a worker thread of its own: it costs O(document) in time and a few copies of
 * the document in memory, which a room's restore must not take from every other room's event
 * loop. A restore is rare, so each gets its own worker, gone when it answers.
 */
export function restoreOnWorker(live: Uint8Array, version: Uint8Array): Promise<Uint8Array> {
  if (FROM_SOURCE) return Promise.resolve().then(() => restoreUpdate(live, version))
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./restore-worker.js', import.meta.url), {
      workerData: { live, version } satisfies RestoreRequest,
    })
    worker.once('message', (reply: RestoreReply) => {
      if ('update' in reply) resolve(reply.update)
      else if (reply.error.code === 'RESTORE_MISMATCH') reject(new RestoreMismatchError(reply.error.message))
      else reject(new Error(`the restore worker failed: ${reply.error.message}`))
      void worker.terminate()
    })
    worker.once('error', reject)
    worker.once('exit', (code) => reject(new Error(`the restore worker exited (${code}) without an answer`)))
  })
}
