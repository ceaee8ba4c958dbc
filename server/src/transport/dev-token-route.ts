import { randomUUID } from 'node:crypto'
import { isValidRoomName, ROOM_NAME_RULE, type ServerErrorCode } from '@symphony/client/wire'
import { createToken } from '@symphony/node'
import { nameClaimProblem } from '@symphony/node/token-claims'

/** Where the route answers. */
export const DEV_TOKEN_PATH = '/dev/token'

/**
 * DEVELOPMENT ONLY: `GET /dev/token?room=<room>&name=<display name>` mints an edit token for that
 * one room to anyone who asks, so the demo works with `AUTH_SECRET` set. It is the pattern an
 * app's backend follows with `@symphony/node`, minus the part that matters: deciding who the user
 * is and which rooms they may open. On only with `DEV_TOKEN_ROUTE=1`, which `npm start` sets when
 * `AUTH_SECRET` is; never in a deployment.
 */
export async function answerDevToken(
  secret: string,
  query: URLSearchParams,
): Promise<{ status: number; body: unknown }> {
  const room = query.get('room') ?? ''
  if (!isValidRoomName(room)) return refusal('ROOM_NAME_INVALID', ROOM_NAME_RULE)
  const name = query.get('name') || 'Guest'
  const problem = nameClaimProblem(name)
  if (problem) return refusal('NAME_INVALID', problem)
  const token = await createToken({
    room,
    access: 'rw',
    userId: `dev-${randomUUID()}`,
    name,
    expiresIn: '15m',
    secret,
  })
  return { status: 200, body: { token } }
}

function refusal(code: Extract<ServerErrorCode, 'ROOM_NAME_INVALID' | 'NAME_INVALID'>, message: string) {
  return { status: 400, body: { error: { code, message } } }
}
