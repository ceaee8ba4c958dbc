import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import pg from 'pg'
import { RedisUpdateJournal } from '../src/adapters/redis-update-journal.js'
import { parseConfig } from '../src/config.js'
import { silentLogger } from '../src/logger.js'
import { requireTestServices, uniqueName } from './helpers/services.js'

// Every character a URL treats specially, so a password that is not encoded breaks the login.
const password = 'p%25 #?/@:+&=[]~!$\'"\\ss'

function urlWithoutPassword(url: string, user: string): string {
  const parsed = new URL(url)
  parsed.username = user
  parsed.password = ''
  return parsed.toString()
}

describe('passwords from their own variables (as a secret store hands them over)', () => {
  const admin = new pg.Client(requireTestServices().databaseUrl)
  const redisAdmin = new Redis(requireTestServices().redisUrl)
  const role = uniqueName('role').replaceAll('-', '_')
  const redisUser = uniqueName('user')
  after(async () => {
    await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => {})
    await admin.end()
    await redisAdmin.call('ACL', 'DELUSER', redisUser)
    redisAdmin.disconnect()
  })

  it('DATABASE_PASSWORD logs in to Postgres, whatever characters it holds', async () => {
    await admin.connect()
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD ${admin.escapeLiteral(password)}`)
    const DATABASE_URL = urlWithoutPassword(requireTestServices().databaseUrl, role)
    const config = parseConfig({ AUTH: 'none', DATABASE_URL, DATABASE_PASSWORD: password })
    assert.equal(config.backends.metadata.kind, 'postgres')
    const client = new pg.Client(
      config.backends.metadata.kind === 'postgres' ? config.backends.metadata.url : '',
    )
    await client.connect()
    const { rows } = await client.query('SELECT current_user AS name')
    await client.end()
    assert.equal(rows[0].name, role)

    const wrong = parseConfig({ AUTH: 'none', DATABASE_URL, DATABASE_PASSWORD: 'not-the-password' })
    const refused = new pg.Client(
      wrong.backends.metadata.kind === 'postgres' ? wrong.backends.metadata.url : '',
    )
    await assert.rejects(refused.connect(), /password authentication failed/)
  })

  it('PUBSUB_PASSWORD logs in to Redis, and the journal (in that Redis) works through it', async () => {
    await redisAdmin.call('ACL', 'SETUSER', redisUser, 'on', `>${password}`, '~*', '&*', '+@all')
    const PUBSUB = urlWithoutPassword(requireTestServices().redisUrl, redisUser)
    const config = parseConfig({ AUTH: 'none', PUBSUB, PUBSUB_PASSWORD: password })
    assert.equal(config.backends.journal.kind, 'redis')
    const url = config.backends.journal.kind === 'redis' ? config.backends.journal.url : ''
    const journal = new RedisUpdateJournal('a', url, {
      keyPrefix: `${uniqueName('url-password')}:`,
      logger: silentLogger,
    })
    const room = uniqueName('room')
    try {
      await journal.append(room, new Uint8Array([1, 2, 3]))
      const { updates } = await journal.read(room)
      assert.deepEqual(
        updates.map((update) => [...update]),
        [[1, 2, 3]],
        'appended and read through the authenticated connection',
      )
    } finally {
      await journal.close()
    }

    const wrong = parseConfig({ AUTH: 'none', PUBSUB, PUBSUB_PASSWORD: 'not-the-password' })
    const refused = new Redis(wrong.backends.journal.kind === 'redis' ? wrong.backends.journal.url : '', {
      lazyConnect: true,
      retryStrategy: () => null,
    })
    const errors: Error[] = []
    refused.on('error', (error: Error) => errors.push(error))
    await assert.rejects(refused.connect())
    assert.match(String(errors[0]), /WRONGPASS/)
    refused.disconnect()
  })
})
