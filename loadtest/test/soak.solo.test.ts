import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { startSymphony } from '../src/bench/servers.js'
import { judge, type SoakReport, type SoakSample } from '../src/soak.js'
import { runCli } from './helpers/cli.js'

/**
 * `npm run test:long` soaks for an hour; `npm test` for long enough to see a trend: the heap is
 * judged by its floor in each half of the steady samples (about 15 s each), and the server's heap
 * is collected every 2–6 s under this load, so each half holds at least one low point. The
 * server's RSS climbs in steps for its first 15–20 s under this churn and then holds (a 60 s run
 * shows it flat after that): 40 s leaves both halves past that climb.
 */
const SECONDS = Number(process.env.SYMPHONY_SOAK_SECONDS ?? 40)

describe('soak', () => {
  it(`rooms churning for ${SECONDS} s leave the server's heap, RSS and open rooms flat`, {
    timeout: (SECONDS + 120) * 1000,
  }, async (t) => {
    const server = await startSymphony({ env: { DATABASE_URL: 'none', ROOM_GRACE_MS: '500' } })
    try {
      const json = join(await mkdtemp(join(tmpdir(), 'soak-')), 'soak.json')
      // Often enough (every 0.6 s in `npm test`) to catch the low point after each collection.
      const sample = Math.max(0.5, SECONDS / 40)
      const args = [
        'soak',
        '--url',
        server.url,
        '--rooms',
        '8',
        '--per-room',
        '3',
        '--duration',
        String(SECONDS),
      ]
      const { done } = runCli([
        ...args,
        '--churn',
        '3',
        '--sample',
        String(sample),
        '--doc-rate',
        '5',
        '--json',
        json,
        '--quiet',
      ])
      const { code, stdout } = await done
      t.diagnostic(stdout)
      const report = JSON.parse(readFileSync(json, 'utf8')) as SoakReport
      assert.equal(code, 0, stdout)
      assert.ok(report.verdict.flat, stdout)
      assert.ok(report.samples.length >= 20, `${report.samples.length} samples`)
      assert.ok(report.roomsChurned >= SECONDS, `${report.roomsChurned} rooms churned`)
      assert.deepEqual(report.errors, [])
      assert.ok(Math.max(...report.samples.map((s) => s.rooms)) <= 8 * 3, 'rooms are unloaded as they go')
    } finally {
      await server.stop()
    }
  })

  it('calls a server whose heap keeps rising "growing", not flat', () => {
    const rising: SoakSample[] = Array.from({ length: 40 }, (_, i) => ({
      atSeconds: i,
      heapBytes: (50 + i * 2) * 2 ** 20,
      rssBytes: 150 * 2 ** 20,
      rooms: 8,
      connections: 24,
    }))
    assert.equal(judge(rising).flat, false)
    const steady = rising.map((s, i) => ({ ...s, heapBytes: (50 + (i % 3)) * 2 ** 20 }))
    assert.equal(judge(steady).flat, true)
    const leakingRooms = steady.map((s, i) => ({ ...s, rooms: 8 + i }))
    assert.equal(judge(leakingRooms).flat, false)
  })
  it('judges the heap by its floor: a sawtooth whose period lengthens is flat, a rising floor is not', () => {
    // Collections every 2 samples, then every 5 (the collector grew its young space): the median
    // rises by several MiB while what survives each collection stays at 28 MiB.
    const teeth = [
      ...Array.from({ length: 12 }, (_, i) => i % 2),
      ...Array.from({ length: 28 }, (_, i) => i % 5),
    ]
    const sample = (heapMiB: number, i: number): SoakSample => ({
      atSeconds: i,
      heapBytes: heapMiB * 2 ** 20,
      rssBytes: 150 * 2 ** 20,
      rooms: 8,
      connections: 24,
    })
    const sawtooth = teeth.map((tooth, i) => sample(28 + tooth * 8, i))
    assert.equal(judge(sawtooth).flat, true)
    const leaking = teeth.map((tooth, i) => sample(28 + i + tooth * 8, i))
    assert.equal(judge(leaking).flat, false)
  })
})
