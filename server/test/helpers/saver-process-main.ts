// Run by saver-process.ts as its own process: a snapshot saver to be killed mid-save.
import { readdir } from 'node:fs/promises'
import { basename } from 'node:path'
import { withFileLock } from '../../src/adapters/file-lock.js'
import { ownerTag } from '../../src/adapters/file-owner.js'
import { FileSnapshotStore } from '../../src/adapters/file-snapshot-store.js'
import { roomFilePath } from '../../src/adapters/room-files.js'

const [folder = '', lockedRoom = '', busyRoom = ''] = process.argv.slice(2)
const say = (event: string, fields: object = {}) => console.log(JSON.stringify({ event, ...fields }))
const store = new FileSnapshotStore(folder)
say('tag', { tag: ownerTag() })

const locked = roomFilePath(folder, lockedRoom, '.ybin')
void withFileLock(`${locked}.lock`, 30_000, async () => {
  say('locked')
  await new Promise(() => {}) // killed in here
})

void (async () => {
  let version: string | null = null
  for (let n = 0; ; n++) {
    version = await store.save(busyRoom, new Uint8Array(256 * 1024).fill(n % 256), version)
    if (n === 0) say('saved')
  }
})()

void store.save(lockedRoom, new Uint8Array([1, 2, 3]), null) // written, then waits for the lock
const temporary = `${basename(locked)}.`
for (;;) {
  const names = await readdir(folder)
  if (names.some((name) => name.startsWith(temporary) && name.endsWith('.tmp'))) break
  await new Promise((resolve) => setTimeout(resolve, 10))
}
say('waiting')
