import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { type MotoService, startMoto } from '@symphony/dev-scripts/services'
import { Redis } from 'ioredis'
import { agree, check } from './fault-suite/checker.js'
import { runFaults } from './fault-suite/fault-run.js'
import { Ledger } from './fault-suite/ledger.js'
import {
  quietProfile,
  requestedRuns,
  SEED_VARIABLE,
  shortProfile,
  unsavedProfile,
} from './fault-suite/profiles.js'
import { passed, reportLines, SUMMARY_HEADING, summaryLine } from './fault-suite/report.js'
import { planSchedule } from './fault-suite/schedule.js'
import { randomFromSeed } from './helpers/seeded-random.js'

const FILE = 'server/test/fault-suite.test.ts'
/** `SYMPHONY_FAULT_SUITE_AUTH=1`: the seeded runs with auth on, each writer a user (its client ids bound to it). */
const WITH_AUTH = process.env.SYMPHONY_FAULT_SUITE_AUTH === '1'

/**
 * The fault suite: writers on every server of a real local cluster count an edit as saved once its
 * sync-status answer comes, while a seeded schedule kills (one the moment it acknowledges), stalls
 * and cuts off servers, Redis and moto, and deletes rooms. After the heal, every acknowledged edit must be on the servers (warm,
 * and again after every server restarted), once, with every copy alike, and no deleted room's
 * content may come back. The controls prove the checker: it sees every edit when nothing fails,
 * and reports loss when the journal is wiped under servers that never saved.
 */
describe('fault suite: what the servers acknowledge survives faults', () => {
  let moto: MotoService
  before(async () => {
    moto = await startMoto()
  })
  after(async () => {
    await moto.stop()
  })

  it('the checker tells lost, resurrected, duplicated, diverged and allowed edits apart', () => {
    const ledger = new Ledger()
    const made = (room: string, id: string, sessionStartedAt: number, ackedAt: number | null) => {
      ledger.made(id, room, sessionStartedAt)
      if (ackedAt !== null)
        ledger.acknowledged({ url: 'ws://s', room, ids: [id], at: ackedAt, newestSentAt: 0 })
    }
    made('q', 'kept', 0, 1)
    made('q', 'lost', 0, 2)
    made('q', 'unacknowledged', 0, null)
    made('r', 'deleted', 0, 3)
    made('r', 'came-back', 0, 4)
    made('r', 'during-delete', 5, 11)
    made('r', 'after-delete', 21, 22)
    const deletion = { room: 'r', startedAt: 10, endedAt: 20, ok: true, outcome: '204' }
    ledger.deleted(deletion)
    const views = new Map([
      [
        'q',
        [
          ['kept', 'kept', 'stranger'],
          ['kept', 'kept', 'stranger'],
        ],
      ],
      ['r', [['came-back', 'after-delete'], ['came-back']]], // two copies that differ: two owners
    ])
    const { examples, ...counts } = check(ledger, views)
    assert.deepEqual(counts, {
      acknowledged: 6,
      mustBePresent: 3,
      mustBeAbsent: 2,
      found: 3,
      lost: 1,
      diverged: 1,
      duplicated: 1,
      resurrected: 1,
      unknown: 1,
    })
    assert.equal(examples.length, 5)
    // One owner per room: one copy and servers holding none agree; a room held nowhere does not.
    assert.ok(agree([null, ['kept'], null]))
    assert.ok(!agree([null, null, null]))
    const only = (q: string[], r: string[]) =>
      new Map([
        ['q', [q]],
        ['r', [r]],
      ])
    ledger.deletes[0] = { ...deletion, ok: false, outcome: '500' }
    const failedDelete = check(ledger, only(['kept', 'lost'], ['after-delete']))
    assert.deepEqual([failedDelete.mustBePresent, failedDelete.mustBeAbsent, failedDelete.lost], [3, 0, 0])
    ledger.deletes.length = 0
    const undeleted = check(ledger, only(['kept'], ['after-delete']))
    assert.equal(undeleted.lost, 4, 'lost, deleted, came-back and during-delete are missing')
  })

  it('one seed always plans the same schedule', () => {
    const plan = (seed: number) => planSchedule(randomFromSeed(seed), shortProfile())
    assert.deepEqual(plan(7), plan(7))
    assert.notDeepEqual(plan(7), plan(8))
    assert.ok(plan(7).episodes.length >= 2, 'a short run has several faults')
    for (const seed of [1, 2, 3, 4, 5]) {
      const [opening] = plan(seed).episodes
      assert.ok(
        opening?.kind === 'ack-kill' && opening.redisRestartAfter,
        `seed ${seed}: a short run opens with an ack-kill and a Redis restart`,
      )
    }
  })

  it('positive control: without faults nothing is lost and the checker finds every acknowledged edit', async (t) => {
    const report = await runFaults({ profile: quietProfile(), seed: 1, moto })
    for (const line of reportLines(report, 'a control, no seed')) t.diagnostic(line)
    assert.ok(report.warm.acknowledged > 100, `only ${report.warm.acknowledged} edits acknowledged`)
    assert.ok(passed(report), reportLines(report, '-').join('\n'))
    assert.ok(report.warm.found >= report.warm.acknowledged && report.cold.found >= report.cold.acknowledged)
  })

  // One test per run, each with a timeout of its own: `npm run test:long` plays many long runs.
  const runs = requestedRuns(process.env)
  const summary: string[] = []
  for (const run of runs) {
    const replay = `${WITH_AUTH ? 'SYMPHONY_FAULT_SUITE_AUTH=1 ' : ''}${SEED_VARIABLE}=${run.replay} npm test -- ${FILE}`
    it(`seeded fault run ${run.replay}: nothing acknowledged is lost, copies agree, deletions stay (${replay})`, {
      timeout: run.profile.faultMs + 240_000,
    }, async (t) => {
      const report = await runFaults({ profile: run.profile, seed: run.seed, moto, auth: WITH_AUTH })
      const lines = reportLines(report, replay)
      for (const line of lines) t.diagnostic(line)
      summary.push(summaryLine(report, run.replay))
      assert.ok(report.warm.acknowledged > 0, `${lines[0]}: nothing was acknowledged`)
      assert.ok(passed(report), lines.join('\n'))
    })
  }

  if (runs.length > 1) {
    it('summary of the seeded runs', (t) => {
      for (const line of [SUMMARY_HEADING, ...summary]) t.diagnostic(line)
    })
  }

  it('negative control: a journal wiped under servers that never saved is reported as loss', async (t) => {
    const report = await runFaults({
      profile: unsavedProfile(),
      seed: 1,
      moto,
      coldRestart: async (cluster) => {
        await Promise.all(Array.from({ length: cluster.size }, (_, i) => cluster.kill(i)))
        const redis = new Redis(cluster.redis.url)
        await redis.flushall()
        redis.disconnect()
        await Promise.all(Array.from({ length: cluster.size }, (_, i) => cluster.startServer(i)))
      },
    })
    for (const line of reportLines(report, 'a control, no seed')) t.diagnostic(line)
    assert.ok(report.warm.acknowledged > 50, `only ${report.warm.acknowledged} edits acknowledged`)
    assert.equal(report.warm.lost, 0, 'before the wipe, every acknowledged edit is there')
    assert.ok(
      report.cold.lost > 0,
      'after it, the acknowledged edits only the journal held are reported lost',
    )
  })
})
