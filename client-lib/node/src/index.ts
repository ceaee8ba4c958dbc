/**
 * @symphony/node: what an app's backend needs from Symphony. Today: room tokens.
 *
 * @example
 * import { createToken } from '@symphony/node'
 * const token = await createToken({ room: 'doc-1', access: 'rw', userId: 'u1', expiresIn: '1h', secret })
 */
export {
  createToken,
  type KeyAlgorithm,
  type KeyTokenOptions,
  type SecretTokenOptions,
  type TokenOptions,
} from './create-token.js'
export { infoClaimProblem, MAX_INFO_BYTES, MAX_NAME_CHARS, nameClaimProblem } from './token-claims.js'
