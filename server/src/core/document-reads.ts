import { ServerBusyError } from '../errors.js'
import { SerialQueue } from '../serial-queue.js'
import { documentJsonText } from './apply-in-slices.js'
import type { MemoryCharges } from './memory-budget.js'

/** Reads of documents as JSON on a server at once: one being read, the others waiting their turn. */
export const MAX_DOCUMENT_READS = 4

/**
 * Bytes reserved per byte of a stored state while the worker builds its document, when nothing
 * better is known (a saved version): a map of small entries builds 20 per byte, `{}` values 32.
 */
export const DOCUMENT_BYTES_PER_BYTE = 24

/** Bytes reserved per byte of a state for its JSON text: written on the worker, copied here, sent. */
const TEXT_BYTES_PER_BYTE = 4

/**
 * Reads of whole documents as JSON (`GET …/document`, `GET …/versions/{id}/document`), which
 * build the whole document once more: one at a time, read off the event loop
 * (`documentJsonText`), each charged to the memory budget (`reads`) before anything is decoded.
 * Past `MAX_DOCUMENT_READS`, or without the memory, a read is refused with `ServerBusyError`
 * (503, retry later), never queued without end.
 */
export class DocumentReads {
  readonly #reads = new SerialQueue()

  constructor(private readonly memory: MemoryCharges) {}

  /** `state`'s document as JSON text; `documentBytes`: what its document holds, when known (a loaded room's charge). */
  async jsonText(state: Uint8Array, documentBytes?: number): Promise<string> {
    if (this.#reads.posted >= MAX_DOCUMENT_READS) {
      throw new ServerBusyError(`${MAX_DOCUMENT_READS} documents are being read as JSON; retry later`)
    }
    return this.#reads.post(() => this.#read(state, documentBytes))
  }

  async #read(state: Uint8Array, documentBytes: number | undefined): Promise<string> {
    const reserved =
      (documentBytes ?? DOCUMENT_BYTES_PER_BYTE * state.length) + TEXT_BYTES_PER_BYTE * state.length
    if (!this.memory.reserve('reads', reserved)) {
      throw new ServerBusyError(
        'the server has no memory to spare for reading this document now; retry later',
      )
    }
    try {
      return await documentJsonText(state)
    } finally {
      this.memory.charge('reads', -reserved)
    }
  }
}
