import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { parseConfig } from '../src/config.js'
import { createSyncServer } from '../src/create-sync-server.js'

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url))

/** The configuration's pure checks are in unit/config.test.ts; these start a server from it. */
describe('starting from the configuration', () => {
  it('names every setting as createSyncServer takes it, so a server starts from the config as is', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'symphony-config-'))
    const config = parseConfig({
      AUTH: 'none',
      PORT: '0',
      HOST: '127.0.0.1',
      SERVER_ID: 'from-the-environment',
      DATABASE_URL: 'none',
      SNAPSHOTS: `file://${folder}/snapshots`,
      JOURNAL: `file://${folder}/journal`,
    })
    const server = await createSyncServer(config)
    try {
      const health = (await (await fetch(`http://127.0.0.1:${server.port}/healthz`)).json()) as {
        ready: boolean
        serverId: string
      }
      assert.equal(health.ready, true)
      assert.equal(health.serverId, 'from-the-environment')
    } finally {
      await server.shutdown()
      rmSync(folder, { recursive: true, force: true })
    }
  })

  it('stops the server at start-up with one clear line', () => {
    const result = spawnSync(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH, PORT: 'abc', AUTH: 'none' },
    })
    assert.equal(result.status, 1)
    const lines = result.stderr.toString().trim().split('\n')
    assert.equal(lines.length, 1)
    assert.match(lines[0] ?? '', /^symphony: configuration error: PORT: /)
  })
})
