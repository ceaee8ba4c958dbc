import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createServer, connect as dial, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { decodeJwt } from 'jose'
import WebSocket from 'ws'
import { type StartedServer, startSymphony } from '../src/bench/servers.js'
import { runCli, startCoordinator } from './helpers/cli.js'

const SECRET = 'the-servers-auth-secret-that-is-32-chars-or-more'
const JOIN_TOKEN = 'join-token-for-the-auth-test-0123'

/** The HTTP status a WebSocket upgrade to `url` gets (101 when it opens). */
function upgradeStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers })
    socket.on('unexpected-response', (_request, response) => {
      resolve(response.statusCode ?? 0)
      socket.terminate()
    })
    socket.on('open', () => {
      resolve(101)
      socket.close()
    })
    socket.on('error', reject)
  })
}

/** A TCP relay to `target` that keeps every byte each way: what really crossed the wire. */
async function recordingProxy(
  target: URL,
): Promise<{ url: string; toAgent: Buffer[]; fromAgent: Buffer[]; server: Server }> {
  const toAgent: Buffer[] = []
  const fromAgent: Buffer[] = []
  const server = createServer((agent) => {
    const coordinator = dial(Number(target.port), target.hostname)
    agent.on('data', (chunk) => {
      fromAgent.push(chunk)
      coordinator.write(chunk)
    })
    coordinator.on('data', (chunk) => {
      toAgent.push(chunk)
      agent.write(chunk)
    })
    agent.on('close', () => coordinator.destroy())
    coordinator.on('close', () => agent.destroy())
    agent.on('error', () => coordinator.destroy())
    coordinator.on('error', () => agent.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address() as { port: number }
  return { url: `ws://127.0.0.1:${address.port}`, toAgent, fromAgent, server }
}

describe('the coordinator and its agents, with auth on', () => {
  let server: StartedServer
  let folder: string
  before(async () => {
    // No metadata database: starting the embedded one costs about 3 s, and nothing here reads it.
    server = await startSymphony({ env: { AUTH_SECRET: SECRET, DATABASE_URL: 'none' } })
    folder = mkdtempSync(join(tmpdir(), 'loadtest-auth-'))
  })
  after(async () => {
    await server.stop()
    rmSync(folder, { recursive: true, force: true })
  })

  test('an agent without the join token, or with a wrong one, is refused before the upgrade (401) and logged', async () => {
    const coordinator = startCoordinator(
      ['coordinator', '--agents', '1', '--host', '127.0.0.1', '--port', '0', '--url', server.url],
      { LOADTEST_JOIN_TOKEN: JOIN_TOKEN, LOADTEST_TOKEN_SECRET: SECRET },
    )
    const url = await coordinator.url
    try {
      assert.equal(await upgradeStatus(url), 401)
      assert.equal(await upgradeStatus(url, { authorization: 'Bearer not-the-join-token-at-all' }), 401)
      assert.equal(await upgradeStatus(url, { authorization: `Bearer ${JOIN_TOKEN}x` }), 401)
      const agent = await runCli(['agent', '--coordinator', url, '--once'], undefined, undefined, {
        LOADTEST_JOIN_TOKEN: 'wrong-token-0123456789',
      }).done
      assert.equal(agent.code, 1)
      assert.match(agent.stderr, /answered 401: it refused the join token/)
      const missing = await runCli(['agent', '--coordinator', url, '--once'], undefined, undefined, {
        LOADTEST_JOIN_TOKEN: '',
      }).done
      assert.equal(missing.code, 2)
      assert.match(missing.stderr, /join token: set LOADTEST_JOIN_TOKEN or pass --join-token-file/)
    } finally {
      coordinator.child.kill('SIGTERM')
    }
    const { stderr } = await coordinator.done
    assert.match(stderr, /refused a connection from \S+: no join token/)
    assert.match(stderr, /refused a connection from \S+: wrong join token/)
  })

  test('a coordinator given no join token makes a random one, writes it to a file only you can read (never to its log), and admits it', async () => {
    let stderr = ''
    const cwd = mkdtempSync(join(tmpdir(), 'loadtest-join-'))
    const coordinator = startCoordinator(
      ['coordinator', '--agents', '1', '--host', '127.0.0.1', '--port', '0', '--url', server.url],
      { LOADTEST_JOIN_TOKEN: '' },
      (text) => {
        stderr = text
      },
      cwd,
    )
    const url = await coordinator.url // printed after the join token's file
    let token = ''
    try {
      const file =
        /^join token written to (\S+) \(agents: --join-token-file or LOADTEST_JOIN_TOKEN\)$/m.exec(
          stderr,
        )?.[1] ?? ''
      assert.ok(file, stderr)
      assert.equal(statSync(join(cwd, file)).mode & 0o777, 0o600)
      token = readFileSync(join(cwd, file), 'utf8').trim()
      assert.ok(token.length >= 32, token)
      assert.ok(!stderr.includes(token), 'the token is not in the log')
      assert.equal(await upgradeStatus(url, { authorization: `Bearer ${token}` }), 101)
      assert.equal(await upgradeStatus(url, { authorization: `Bearer ${JOIN_TOKEN}` }), 401)
    } finally {
      coordinator.child.kill('SIGTERM')
      assert.ok(!(await coordinator.done).stderr.includes(token), 'nor later')
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  test("an agent gets its users' tokens for the run's rooms alone, expiring after the run, and never the secret", async () => {
    const prefix = `auth-${process.pid}`
    const coordinator = startCoordinator(
      ['coordinator', '--agents', '1', '--host', '127.0.0.1', '--port', '0', '--url', server.url]
        .concat(['--rooms', '2', '--duration', '1', '--ramp', '0', '--token-margin', '3', '--quiet'])
        .concat([
          '--room-prefix',
          prefix,
          '--json',
          join(folder, 'r.json'),
          '--html',
          join(folder, 'r.html'),
        ]),
      { LOADTEST_JOIN_TOKEN: JOIN_TOKEN, LOADTEST_TOKEN_SECRET: SECRET },
    )
    const proxy = await recordingProxy(new URL(await coordinator.url))
    const started = Math.floor(Date.now() / 1000)
    const agent = runCli(['agent', '--once'], undefined, undefined, {
      LOADTEST_COORDINATOR_URL: proxy.url,
      LOADTEST_JOIN_TOKEN: JOIN_TOKEN,
    })
    const [finished, agentDone] = await Promise.all([coordinator.done, agent.done])
    proxy.server.close()
    assert.equal(finished.code, 0, finished.stderr)
    assert.equal(agentDone.code, 0, agentDone.stderr)
    assert.match(finished.stdout, /convergence: 2\/2 rooms/)

    const received = Buffer.concat(proxy.toAgent)
    const sent = Buffer.concat(proxy.fromAgent)
    assert.ok(received.includes('"type":"run"'), 'the plan crossed the recorded connection')
    assert.ok(sent.includes(`Bearer ${JOIN_TOKEN}`), 'the agent presented the join token')
    assert.ok(!received.includes(SECRET) && !sent.includes(SECRET), 'the secret never crossed')
    assert.ok(!received.includes('"tokenSecret"'))

    // 2 rooms x (4 users + the convergence check's client), each for its own room only.
    const tokens = [...new Set(received.toString('latin1').match(/eyJ[\w-]+\.[\w-]+\.[\w-]+/g) ?? [])]
    assert.equal(tokens.length, 10)
    const rooms = [`${prefix}-0`, `${prefix}-1`]
    for (const token of tokens) {
      const claims = decodeJwt(token)
      assert.ok(rooms.includes(claims.room as string), `room claim ${String(claims.room)}`)
      assert.equal(claims.access, 'rw')
      // ramp 0 + duration 1 + margin 3
      assert.ok((claims.exp ?? 0) >= started + 4 && (claims.exp ?? 0) <= started + 6, `exp ${claims.exp}`)
    }

    const [token = ''] = tokens
    const room = decodeJwt(token).room as string
    const roomUrl = (name: string) => `${server.url}/${encodeURIComponent(name)}?token=${token}`
    assert.equal(await upgradeStatus(roomUrl(room)), 101, 'its own room, while valid')
    assert.equal(await upgradeStatus(roomUrl(`${prefix}-9`)), 403, 'a room outside the run')
    assert.equal(await upgradeStatus(roomUrl('some-app-room')), 403)
    // Wait out the token's expiry (its exp claim, in whole seconds), then it opens nothing.
    await delay(((decodeJwt(token).exp ?? 0) + 1) * 1000 - Date.now())
    assert.equal(await upgradeStatus(roomUrl(room)), 401, 'the token has expired')
  })
})
