// Run by crash-leftovers.test.ts as its own process: takes a snapshot's lock once told to, after
// the test has limited the size of the files it may write (prlimit --fsize=0), and says how it went.
import { withFileLock } from '../../src/adapters/file-lock.js'

const [lock = ''] = process.argv.slice(2)
const say = (event: string, fields: object = {}) => console.log(JSON.stringify({ event, ...fields }))
process.stdin.once('data', () => {
  withFileLock(lock, 3_600_000, async () => say('locked')).catch((error: NodeJS.ErrnoException) =>
    say('failed', { code: error.code }),
  )
})
say('ready')
