import { setImmediate as nextTurn } from 'node:timers/promises'
import v8 from 'node:v8'
import { runInNewContext } from 'node:vm'

// The collector, also where the process was not started with --expose-gc (`npm run test:unit`).
v8.setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/**
 * How many of `refs` the collector has freed: whatever still points at a target (a reaction left
 * behind, an entry never dropped) keeps it alive.
 */
export async function freed(refs: WeakRef<object>[]): Promise<number> {
  let count = 0
  for (let round = 0; round < 5 && count < refs.length; round++) {
    // A WeakRef's target is kept until the job that created or read it ends: collect on a later turn.
    await nextTurn()
    gc()
    await nextTurn()
    count = refs.filter((ref) => ref.deref() === undefined).length
  }
  return count
}
