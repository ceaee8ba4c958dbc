/**
 * @symphony/node: what an app's backend needs from Symphony: room tokens, and the REST API.
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
export {
  createRoomsApi,
  type RoomAuthor,
  type RoomsApi,
  type RoomsApiOptions,
  SymphonyApiError,
} from './rooms-api.js'
export {
  infoClaimProblem,
  MAX_INFO_BYTES,
  MAX_NAME_CHARS,
  nameClaimProblem,
  RESERVED_SUBJECT_PREFIX,
  subjectClaimProblem,
} from './token-claims.js'
