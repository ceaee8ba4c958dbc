/**
 * The workloads, named after the published load tests they reproduce, so our figures sit beside
 * theirs: every user of a room is connected; `writers` of them edit and all of them move a cursor.
 */
export interface Workload {
  name: WorkloadName
  /** Where the shape comes from. */
  source: string
  rooms: number
  perRoom: number
  /** Document updates per writing user per second. */
  docRate: number
  /** Presence (cursor) updates per user per second. */
  presenceRate: number
  /** Who edits the document: every user, or only the first of each room. */
  writers: 'all' | 'first'
  /** `set`: each user moves its own shape in a map; `append`: records are pushed onto a list. */
  edit: 'set' | 'append'
}

export const WORKLOADS = {
  symphony: {
    name: 'symphony',
    source:
      'the Symphony case study: 4 users per room, 1 document and 5 presence updates per user per second',
    rooms: 60,
    perRoom: 4,
    docRate: 1,
    presenceRate: 5,
    writers: 'all',
    edit: 'set',
  },
  beacon: {
    name: 'beacon',
    source:
      'the Casual Sheets harness: 3 users per room, one writer appending a timestamped record every 2 s',
    rooms: 50,
    perRoom: 3,
    docRate: 0.5,
    presenceRate: 0,
    writers: 'first',
    edit: 'append',
  },
  'single-room': {
    name: 'single-room',
    source: 'the SpreadJS report: N users in one document, one operation every 6 s each',
    rooms: 1,
    perRoom: 100,
    docRate: 1 / 6,
    presenceRate: 0,
    writers: 'all',
    edit: 'set',
  },
} as const satisfies Record<string, Workload>

export type WorkloadName = 'symphony' | 'beacon' | 'single-room'
export const WORKLOAD_NAMES = Object.keys(WORKLOADS) as WorkloadName[]
