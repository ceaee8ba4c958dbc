import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { after, describe, it } from 'node:test'
import { pino } from 'pino'
import * as Y from 'yjs'
import { FileSnapshotStore } from '../src/adapters/file-snapshot-store.js'
import { FileUpdateJournal } from '../src/adapters/file-update-journal.js'
import type { Logger } from '../src/logger.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { metricValue } from './helpers/cluster.js'
import { storedState } from './helpers/snapshots.js'
import { startTestServer } from './helpers/test-server.js'

/**
 * A real small disk: a 1 MiB tmpfs (the tests run as root, as CI does), so the writes fail with
 * the kernel's own ENOSPC.
 */
function mountSmallDisk(): { folder: string; fill(): void; free(): void; unmount(): void } {
  const folder = mkdtempSync(join(tmpdir(), 'symphony-small-disk-'))
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', folder])
  const filler = join(folder, 'filler')
  return {
    folder,
    fill: () => {
      try {
        writeFileSync(filler, Buffer.alloc(2 * 1024 * 1024)) // more than fits: fills it up
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error
      }
    },
    free: () => rmSync(filler, { force: true }),
    unmount: () => {
      execFileSync('umount', ['--lazy', folder]) // a server's journal may still hold a file open
      rmSync(folder, { recursive: true, force: true })
    },
  }
}

/** A logger that keeps every line, to check what an operator would read. */
function recordingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = []
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(chunk.toString())
      done()
    },
  })
  return { logger: pino({ level: 'info' }, sink), lines }
}

describe('a full disk', () => {
  const disk = mountSmallDisk()
  after(async () => {
    await cleanUpAfterTest()
    disk.unmount()
  })

  it('fails snapshots without leaving partial files, is reported in /metrics and the log, and heals', async () => {
    const { logger, lines } = recordingLogger()
    const snapshots = new FileSnapshotStore(join(disk.folder, 'snapshots'))
    const t = await startTestServer({
      logger,
      snapshot: { intervalMs: 60_000, retryBaseMs: 20, retryMaxMs: 100 },
      adapters: { snapshots, journal: new FileUpdateJournal(join(disk.folder, 'journal')) },
    })
    const room = uniqueRoom()
    const client = await connectSynced(t.wsUrl, room)
    client.doc.getText('t').insert(0, 'x'.repeat(64 * 1024))
    await eventually(
      () => t.server.manager.loadedRoom(room)?.doc.getText('t').length === 64 * 1024,
      'applied',
    )
    disk.fill()
    // The store on its own: a write that fails leaves no partial file behind.
    const other = uniqueRoom('alone')
    await assert.rejects(snapshots.save(other, new Uint8Array(256 * 1024), null), { code: 'ENOSPC' })
    assert.deepEqual(
      readdirSync(join(disk.folder, 'snapshots')).filter((name) => name.startsWith(other)),
      [],
      'no partial temporary file is left taking space',
    )
    const metrics = async () => (await fetch(`${t.httpUrl}/metrics`)).text()
    client.doc.getText('t').insert(0, `while full ${'y'.repeat(16 * 1024)}`) // more than a page's slack
    await eventually(
      async () => metricValue(await metrics(), 'symphony_storage_full{store="journal"}') === 1,
      'the journal append failed for lack of space',
    )
    await assert.rejects(t.server.manager.save(room), { code: 'ENOSPC' })
    assert.equal(metricValue(await metrics(), 'symphony_storage_full{store="snapshots"}'), 1)
    assert.ok(
      lines.some((line) => line.includes('the disk is full')),
      'the log says so',
    )
    // The writer retries every 20–100 ms, so a retry's temporary file may exist for an instant;
    // one left behind would stay.
    await eventually(
      () => readdirSync(join(disk.folder, 'snapshots')).length === 0,
      'no partial temporary file is left taking space',
    )
    disk.free()
    await eventually(
      async () => (await storedState(snapshots, room))?.length !== undefined,
      'saved by a retry',
    )
    await eventually(
      async () => /^symphony_storage_full\{store="snapshots"\} 0$/m.test(await metrics()),
      'the flag is cleared once saved',
    )
    assert.deepEqual(readdirSync(join(disk.folder, 'snapshots')), [`${room}.ybin`])
    client.doc.getText('t').insert(0, 'with room again ')
    await eventually(
      async () => /^symphony_storage_full\{store="journal"\} 0$/m.test(await metrics()),
      'the journal heals too',
    )
    const saved = new Y.Doc()
    Y.applyUpdate(saved, (await storedState(snapshots, room)) as Uint8Array)
    assert.ok(saved.getText('t').toString().startsWith('while full '), 'the edit made while full was saved')
  })
})
