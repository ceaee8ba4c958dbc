import { MessageType } from './message-types.js'

/**
 * App messages: message types an app embedding the server defines (`createSyncServer({ hooks:
 * { messages } })`), each handled on the server the sender is connected to, which answers the
 * sender. Plain y-websocket providers never send one and are never sent one.
 *
 * - A client sends `varUint(MESSAGE_APP) varUint8Array(JSON text of an AppRequest)`, at most the
 *   server's presence limit (`MAX_PRESENCE_BYTES`, 16 KiB by default), counted by its message rate
 *   limit; a bigger one is closed with 1009, one that is no `AppRequest` with 1002.
 * - The server answers that connection alone with `varUint(MESSAGE_APP) varUint8Array(JSON text
 *   of an AppReply)` with the same `id`: the handler's result, or an error.
 */
export const MESSAGE_APP = MessageType.App

/** What a client asks: `type` names the app's handler; `id` pairs the reply with it. */
export interface AppRequest {
  id: number
  type: string
  data: unknown
}

/** Why the server answered an app message with an error. */
export type AppMessageErrorCode =
  /** The app's handler refused it (`refuse(reason)`): the message says why. */
  | 'MESSAGE_REFUSED'
  /** The app defines no handler for this type. */
  | 'UNKNOWN_MESSAGE_TYPE'
  /** The handler threw, or returned what is not JSON: the server logged it. */
  | 'MESSAGE_FAILED'
  /** The handler did not answer within the server's `HOOK_TIMEOUT_MS`. */
  | 'HOOK_TIMEOUT'
  /** This connection already has as many messages being handled as the server allows: wait for their replies. */
  | 'TOO_MANY_MESSAGES'

/** The server's answer to one `AppRequest`. */
export type AppReply =
  | { id: number; data: unknown }
  | { id: number; error: { code: AppMessageErrorCode; message: string } }

/** The request an app message's JSON text holds, or null when it holds none. */
export function parseAppRequest(text: string): AppRequest | null {
  const value = parseObject(text)
  if (!value || !Number.isSafeInteger(value.id) || typeof value.type !== 'string') return null
  return { id: value.id as number, type: value.type, data: value.data ?? null }
}

/** The reply an app message's JSON text holds, or null when it holds none. */
export function parseAppReply(text: string): AppReply | null {
  const value = parseObject(text)
  if (!value || !Number.isSafeInteger(value.id)) return null
  const error = value.error as { code?: unknown; message?: unknown } | undefined
  if (error === undefined) return { id: value.id as number, data: value.data ?? null }
  if (typeof error?.code !== 'string' || typeof error.message !== 'string') return null
  return {
    id: value.id as number,
    error: { code: error.code as AppMessageErrorCode, message: error.message },
  }
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null
  } catch {
    return null
  }
}
