import * as encoding from 'lib0/encoding'
import { type EditRecord, LOG, SHAPES } from './records.js'

/** Yjs's content type of a JSON-like value (`ContentAny`). */
const CONTENT_ANY = 8
const HAS_ORIGIN = 0x80
const HAS_PARENT_SUB = 0x20

/**
 * A sending user's edits as Yjs v1 updates, written directly instead of through a `Y.Doc`
 * transaction: the generator writes thousands of edits a second and must stay far cheaper than
 * the server it measures. Each update is exactly what `Y.Doc` would emit for the same edit (the
 * tests compare bytes): `set` puts the record at the user's own key of the `shapes` map, deleting
 * the value before it; `append` pushes it onto the `log` array after this user's previous record.
 * That holds while this user is the only one writing that key, or the only one appending.
 */
export class EditEncoder {
  #clock = 0

  constructor(
    readonly clientId: number,
    private readonly edit: 'set' | 'append',
  ) {}

  /** Clocks used so far (each edit takes one). */
  get clock(): number {
    return this.#clock
  }

  encode(record: EditRecord): Uint8Array {
    const encoder = encoding.createEncoder()
    const clock = this.#clock++
    const origin = clock > 0
    encoding.writeVarUint(encoder, 1) // clients with structs
    encoding.writeVarUint(encoder, 1) // structs of this client
    encoding.writeVarUint(encoder, this.clientId)
    encoding.writeVarUint(encoder, clock)
    const isMap = this.edit === 'set'
    encoding.writeUint8(encoder, CONTENT_ANY | (origin ? HAS_ORIGIN : 0) | (isMap ? HAS_PARENT_SUB : 0))
    if (origin) {
      // After our previous value (the map entry it replaces, or our previous log record).
      encoding.writeVarUint(encoder, this.clientId)
      encoding.writeVarUint(encoder, clock - 1)
    } else {
      encoding.writeVarUint(encoder, 1) // the parent is a root type, by name
      encoding.writeVarString(encoder, isMap ? SHAPES : LOG)
      if (isMap) encoding.writeVarString(encoder, `user-${record.u}`)
    }
    encoding.writeVarUint(encoder, 1) // one value
    encoding.writeAny(encoder, record as unknown as { [key: string]: encoding.AnyEncodable })
    // The delete set: a map entry overwritten.
    if (isMap && origin) {
      encoding.writeVarUint(encoder, 1)
      encoding.writeVarUint(encoder, this.clientId)
      encoding.writeVarUint(encoder, 1)
      encoding.writeVarUint(encoder, clock - 1)
      encoding.writeVarUint(encoder, 1)
    } else {
      encoding.writeVarUint(encoder, 0)
    }
    return encoding.toUint8Array(encoder)
  }
}
