import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { closed, openRaw, terminateRawSockets } from './helpers/raw-socket.js'
import { startServerProcess } from './helpers/server-process.js'

afterEach(() => {
  destroyClients()
  terminateRawSockets()
})

describe('graceful shutdown (SIGTERM) of the built server', () => {
  it('saves every dirty room, closes clients with 1001, exits 0, and serves the same document after a restart', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'symphony-restart-'))
    const env = {
      AUTH: 'none',
      SNAPSHOTS: `file://${folder}`,
      DATABASE_URL: 'none',
      SNAPSHOT_INTERVAL_MS: '3600000',
      LOG_LEVEL: 'info',
    }
    const first = await startServerProcess(env)
    assert.ok(
      first.logs.some((log) => String(log.msg).startsWith('AUTH=none')),
      'AUTH=none is announced',
    )
    const url = `ws://127.0.0.1:${first.port}`
    const rooms = [uniqueRoom('restart'), uniqueRoom('restart')]
    const writers = await Promise.all(rooms.map((room) => connectSynced(url, room)))
    const watchers = await Promise.all(rooms.map((room) => connectSynced(url, room)))
    writers.forEach((writer, i) => {
      writer.doc.getText('t').insert(0, `document ${i}`)
    })
    await eventually(
      () => watchers.every((w, i) => w.doc.getText('t').toString() === `document ${i}`),
      'the server has applied every edit',
    )
    const raw = await openRaw(`${url}/${rooms[0]}`)
    const rawClosed = closed(raw)
    for (const client of [...writers, ...watchers]) client.provider.shouldConnect = false // no reconnect here
    first.child.kill('SIGTERM')
    assert.equal((await rawClosed).code, CloseCode.GoingAway)
    assert.deepEqual(await first.exited, { code: 0, signal: null })
    destroyClients()

    const second = await startServerProcess(env)
    try {
      const readers = await Promise.all(
        rooms.map((room) => connectSynced(`ws://127.0.0.1:${second.port}`, room)),
      )
      readers.forEach((reader, i) => {
        assert.equal(reader.doc.getText('t').toString(), `document ${i}`)
      })
    } finally {
      destroyClients()
      second.child.kill('SIGTERM')
      await second.exited
    }
  })

  it('exits within SHUTDOWN_TIMEOUT_MS with code 1 and names the rooms it could not save', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'symphony-unsavable-'))
    const server = await startServerProcess({
      AUTH: 'none',
      SNAPSHOTS: `file://${folder}`,
      DATABASE_URL: 'none',
      SNAPSHOT_INTERVAL_MS: '3600000',
      SHUTDOWN_TIMEOUT_MS: '2000',
    })
    const room = uniqueRoom('unsavable')
    const writer = await connectSynced(`ws://127.0.0.1:${server.port}`, room)
    const watcher = await connectSynced(`ws://127.0.0.1:${server.port}`, room)
    writer.doc.getText('t').insert(0, 'cannot be saved')
    await eventually(() => watcher.doc.getText('t').length > 0, 'applied')
    rmSync(folder, { recursive: true })
    writeFileSync(folder, 'a file where the snapshot folder was') // every save now fails with ENOTDIR
    writer.provider.shouldConnect = false
    watcher.provider.shouldConnect = false
    const startedAt = Date.now()
    server.child.kill('SIGTERM')
    const exit = await server.exited
    assert.equal(exit.code, 1)
    assert.ok(Date.now() - startedAt < 2_000 + 3_000, 'exited by the timeout (plus process start-up slack)')
    const report = server.logs.find((log) => log.msg === 'shut down with unsaved rooms')
    assert.deepEqual(report?.rooms, [room])
  })
})
