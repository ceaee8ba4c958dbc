import {
  closeSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { readFile, rm } from 'node:fs/promises'
import { crc32 } from 'node:zlib'
import type { JournalContents, JournalPosition, UpdateJournal } from '../ports/update-journal.js'
import { EpochFences } from './epoch-fences.js'
import { DEFAULT_STALE_FILE_MS, sweepLeftovers } from './file-leftovers.js'
import { ownerTag } from './file-owner.js'
import { roomFilePath } from './room-files.js'

/** The embedded journal has one writer: this process. */
const WRITER = 'file'
const MAGIC = 0x314a5953 // "SYJ1"
/** Magic, then the sequence number of the first record in the file (records are numbered on). */
const HEADER_BYTES = 12
/** Each record: payload length, CRC-32 of the payload, payload. */
const RECORD_HEADER_BYTES = 8
/** A trim's new file, `<room>.journal.<owner tag>.tmp` (`<room>.journal.tmp` before tags). */
const LEFTOVER = /\.journal\.(?:([^.]+)\.)?tmp$/

interface ParsedJournal {
  firstSeq: number
  updates: Uint8Array[]
  /** Damaged records passed over: the whole records after them are kept. */
  skipped: number
  /** Where each record starts, and where the last whole record ends. */
  recordStarts: number[]
  validBytes: number
}

export interface FileUpdateJournalOptions {
  /** A trim's temporary file whose writer is not provably gone is removed at open once it is this old. Default 1 h. */
  staleFileMs?: number
}

interface OpenJournal {
  fd: number
  nextSeq: number
  bytes: number
}

/**
 * Embedded `UpdateJournal`: one append-only file per room, `<room>.journal` (the name encoded by
 * `roomFileName`). Appends are
 * synchronous `write`s, so an update is in the operating system's hands before the server
 * forwards it: a killed process loses nothing (a power cut may lose what the disk had not
 * flushed). A torn last record, from a crash mid-write, fails its checksum and is dropped.
 * Only one process may use a folder at a time. A trim killed midway leaves its temporary file:
 * opening the journal sweeps those whose writer is gone (`file-owner.ts`) or older than
 * `staleFileMs` (1 h), before the first read. Its fences live in this process, the folder's one
 * user.
 */
export class FileUpdateJournal implements UpdateJournal {
  readonly #open = new Map<string, OpenJournal>()
  readonly #fences = new EpochFences()
  readonly #swept: Promise<void>

  constructor(
    private readonly folder: string,
    options: FileUpdateJournalOptions = {},
  ) {
    mkdirSync(folder, { recursive: true })
    const staleFileMs = options.staleFileMs ?? DEFAULT_STALE_FILE_MS
    // Appends need not wait: the sweep never touches a room's journal, nor this process's files.
    this.#swept = sweepLeftovers(folder, { leftovers: LEFTOVER, staleFileMs })
  }

  append(room: string, update: Uint8Array, epoch?: number): Promise<JournalPosition> {
    let journal: OpenJournal | undefined
    try {
      this.#fences.pass(room, epoch)
      journal = this.#openForAppend(room)
      const record = Buffer.alloc(RECORD_HEADER_BYTES + update.length)
      record.writeUInt32LE(update.length, 0)
      record.writeUInt32LE(crc32(update), 4)
      record.set(update, RECORD_HEADER_BYTES)
      writeAll(journal.fd, record)
      journal.bytes += record.length
      return Promise.resolve(new Map([[WRITER, String(journal.nextSeq++)]]))
    } catch (error) {
      // A partial record (disk full) would hide every later one: cut it off, reopen next time.
      if (journal) this.#forget(room, journal.bytes)
      return Promise.reject(error)
    }
  }

  async fence(room: string, epoch: number): Promise<void> {
    this.#fences.pass(room, epoch)
  }

  async read(room: string): Promise<JournalContents> {
    await this.#swept
    const bytes = await readFile(this.#path(room)).catch(ignoreMissing)
    const { firstSeq, updates, skipped } = parse(bytes ?? Buffer.alloc(0), room)
    const last = firstSeq + updates.length - 1
    const position = updates.length > 0 ? new Map([[WRITER, String(last)]]) : new Map()
    return skipped > 0 ? { updates, position, skipped } : { updates, position }
  }

  /** Rewrites the file without the trimmed records (synchronously, so no append lands in between). */
  async trim(room: string, position: JournalPosition, epoch?: number): Promise<void> {
    this.#fences.pass(room, epoch)
    const upTo = position.get(WRITER)
    if (upTo === undefined) return
    const path = this.#path(room)
    let bytes: Buffer
    try {
      bytes = readFileSync(path)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
      throw error
    }
    const parsed = parse(bytes, room)
    const dropped = Math.min(parsed.updates.length, Number(upTo) - parsed.firstSeq + 1)
    if (dropped <= 0) return
    const keptFrom = parsed.recordStarts[dropped] ?? parsed.validBytes
    const temporary = `${path}.${ownerTag()}.tmp`
    try {
      writeFileSync(
        temporary,
        Buffer.concat([header(parsed.firstSeq + dropped), bytes.subarray(keptFrom, parsed.validBytes)]),
      )
      renameSync(temporary, path)
    } catch (error) {
      rmSync(temporary, { force: true }) // a full disk: each try has its own name, so leave none behind
      throw error
    }
    this.#forget(room)
  }

  async delete(room: string, epoch?: number): Promise<void> {
    this.#fences.pass(room, epoch)
    this.#forget(room)
    await rm(this.#path(room), { force: true })
  }

  async close(): Promise<void> {
    for (const room of [...this.#open.keys()]) this.#forget(room)
  }

  #openForAppend(room: string): OpenJournal {
    const open = this.#open.get(room)
    if (open) return open
    const path = this.#path(room)
    const fd = openSync(path, 'a+')
    try {
      const bytes = readFileSync(fd)
      const parsed = parse(bytes, room)
      // Records after a torn one could never be read back: cut the tail before appending.
      if (parsed.validBytes < bytes.length) ftruncateSync(fd, parsed.validBytes)
      if (parsed.validBytes === 0) writeAll(fd, header(0))
      const journal = {
        fd,
        nextSeq: parsed.firstSeq + parsed.updates.length,
        bytes: Math.max(parsed.validBytes, HEADER_BYTES),
      }
      this.#open.set(room, journal)
      return journal
    } catch (error) {
      closeSync(fd)
      throw error
    }
  }

  /** Closes the room's file, first cutting it to `truncateTo` bytes if given. */
  #forget(room: string, truncateTo?: number): void {
    const open = this.#open.get(room)
    if (!open) return
    this.#open.delete(room)
    try {
      if (truncateTo !== undefined) ftruncateSync(open.fd, truncateTo)
    } finally {
      closeSync(open.fd)
    }
  }

  #path(room: string): string {
    return roomFilePath(this.folder, room, '.journal')
  }
}

function header(firstSeq: number): Buffer {
  const bytes = Buffer.alloc(HEADER_BYTES)
  bytes.writeUInt32LE(MAGIC, 0)
  bytes.writeBigUInt64LE(BigInt(firstSeq), 4)
  return bytes
}

/**
 * Reads the whole records; a file cut short inside its header (a crash creating it) holds none.
 * A record that fails its checksum is skipped by its length and reading goes on after it; a
 * record running past the end is a torn last write, where reading stops.
 */
function parse(bytes: Buffer, room: string): ParsedJournal {
  if (bytes.length < HEADER_BYTES)
    return { firstSeq: 0, updates: [], skipped: 0, recordStarts: [], validBytes: 0 }
  if (bytes.readUInt32LE(0) !== MAGIC)
    throw new Error(`the journal of room ${room} is not a Symphony journal`)
  const parsed: ParsedJournal = {
    firstSeq: Number(bytes.readBigUInt64LE(4)),
    updates: [],
    skipped: 0,
    recordStarts: [],
    validBytes: HEADER_BYTES,
  }
  let offset = HEADER_BYTES
  while (offset + RECORD_HEADER_BYTES <= bytes.length) {
    const length = bytes.readUInt32LE(offset)
    const end = offset + RECORD_HEADER_BYTES + length
    // Past the end (or empty: no empty update is journaled): a torn last write; reading stops.
    if (length === 0 || end > bytes.length) break
    const payload = bytes.subarray(offset + RECORD_HEADER_BYTES, end)
    if (crc32(payload) === bytes.readUInt32LE(offset + 4)) {
      parsed.recordStarts.push(offset)
      parsed.updates.push(new Uint8Array(payload))
      parsed.validBytes = end
    } else {
      // Damaged inside: skipped by its length, never searched for records (a client's bytes could
      // spell one), and reading goes on with the next.
      parsed.skipped++
    }
    offset = end
  }
  return parsed
}

function writeAll(fd: number, bytes: Uint8Array): void {
  for (let written = 0; written < bytes.length; ) {
    written += writeSync(fd, bytes, written, bytes.length - written)
  }
}

function ignoreMissing(error: NodeJS.ErrnoException): null {
  if (error.code === 'ENOENT') return null
  throw error
}
