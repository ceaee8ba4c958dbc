import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createToken } from '@symphony/node'
import { eventually, uniqueRoom } from '@symphony/test-helpers/clients'
import { destroyNodeClients, nodeClient } from '@symphony/test-helpers/node-client'
import { TEST_SECRET } from '@symphony/test-helpers/tokens'
import { DASHBOARD_TOKEN, type DashboardStack, startDashboardStack } from './helpers/dashboard-stack.js'

interface Session {
  userId: string
  userName: string | null
  userInfo: Record<string, unknown> | null
}

/** Who is connected, as the token said, from a real client through Postgres to the dashboard API. */
describe("the sessions view shows the token's name and info", () => {
  let stack: DashboardStack
  before(async () => {
    stack = await startDashboardStack({ auth: { mode: 'jwt', secret: TEST_SECRET } })
  })
  after(async () => {
    await destroyNodeClients()
    await stack.stop()
  })

  it('lists each connection with its user id, display name and info', async () => {
    const room = uniqueRoom('who')
    const mint = (userId: string, extra: { name?: string; info?: Record<string, unknown> }) => () =>
      createToken({ room, access: 'rw', userId, expiresIn: '10m', secret: TEST_SECRET, ...extra })
    const ada = nodeClient(stack.sync.wsUrl, {
      getToken: mint('u-ada', { name: 'Ada <b>Lovelace</b>', info: { team: 'analytics', seat: 7 } }),
    }).enter(room)
    const bot = nodeClient(stack.sync.wsUrl, { getToken: mint('u-bot', {}) }).enter(room)
    await Promise.all([ada.whenSynced(), bot.whenSynced()])
    let sessions: Session[] = []
    await eventually(async () => {
      const response = await fetch(`${stack.base}/api/rooms/${encodeURIComponent(room)}`, {
        headers: { authorization: `Bearer ${DASHBOARD_TOKEN}` },
      })
      sessions = response.ok ? ((await response.json()) as { connections: Session[] }).connections : []
      return sessions.length === 2
    }, 'both sessions reach the dashboard')
    const byUser = Object.fromEntries(sessions.map((s) => [s.userId, s]))
    assert.deepEqual(
      { name: byUser['u-ada']?.userName, info: byUser['u-ada']?.userInfo },
      { name: 'Ada <b>Lovelace</b>', info: { team: 'analytics', seat: 7 } },
    )
    assert.deepEqual(
      { name: byUser['u-bot']?.userName, info: byUser['u-bot']?.userInfo },
      { name: null, info: null },
    )
  })
})
