import * as encoding from 'lib0/encoding'

/** Hand-encoded v1 updates, for shapes no Yjs client produces. */
export const craft = {
  update(write: (encoder: encoding.Encoder) => void): Uint8Array {
    const encoder = encoding.createEncoder()
    write(encoder)
    return encoding.toUint8Array(encoder)
  },
  /** A one-character string item at the root text `t`, or after `origin`. */
  item(encoder: encoding.Encoder, text: string, origin?: [number, number], right?: [number, number]): void {
    encoding.writeUint8(encoder, 4 | (origin ? 0x80 : 0) | (right ? 0x40 : 0))
    if (origin) for (const n of origin) encoding.writeVarUint(encoder, n)
    if (right) for (const n of right) encoding.writeVarUint(encoder, n)
    if (!origin && !right) {
      encoding.writeVarUint(encoder, 1)
      encoding.writeVarString(encoder, 't')
    }
    encoding.writeVarString(encoder, text)
  },
  /** The header of one client's group of structs. */
  group(encoder: encoding.Encoder, structs: number, client: number, clock: number): void {
    for (const n of [structs, client, clock]) encoding.writeVarUint(encoder, n)
  },
}
