/**
 * @symphony/node: what an app's backend needs from Symphony: room tokens, the REST API (reads,
 * writes, `mutate`, the room listing, version history and restore), and webhook verification.
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
export type { MutateOptions } from './room-mutations.js'
export {
  createRoomsApi,
  type ListRoomsOptions,
  type ListVersionsOptions,
  type RestoreResult,
  type RoomAuthor,
  type RoomList,
  type RoomSummary,
  type RoomsApi,
  type RoomsApiOptions,
  type RoomVersion,
  type RoomVersionList,
} from './rooms-api.js'
export { SymphonyApiError } from './symphony-api-error.js'
export {
  infoClaimProblem,
  MAX_INFO_BYTES,
  MAX_NAME_CHARS,
  MAX_SUBJECT_CHARS,
  nameClaimProblem,
  RESERVED_SUBJECT_PREFIX,
  subjectClaimProblem,
} from './token-claims.js'
export {
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookEvent,
  type WebhookHeaders,
  type WebhookUser,
  type WebhookVerificationCode,
  WebhookVerificationError,
} from './verify-webhook.js'
