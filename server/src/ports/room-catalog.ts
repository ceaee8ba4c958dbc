/** One room as the room listing shows it, from the metadata the servers record. */
export interface CatalogRoom {
  name: string
  /** The document's size as last recorded (an estimate of its encoded size). */
  bytes: number
  /** Open connections on live servers. */
  connections: number
  /** When a client or the REST API last changed the document, as recorded; null if never recorded. */
  updatedAt: Date | null
}

/** A page of rooms, in name order (by code point). */
export interface CatalogPage {
  rooms: CatalogRoom[]
  /** Whether rooms follow the last one. */
  more: boolean
}

export interface CatalogQuery {
  /** Only names starting with this ('' for every room). */
  prefix: string
  /** Only names after this one (the last of the previous page), or null from the first. */
  after: string | null
  limit: number
}

/**
 * The read side of the metadata store: which rooms exist, for the REST API's room listing.
 * Pages by name, so rooms added or removed while a client pages never shift what it sees of
 * the others. Rejects with `ServerBusyError` when too many listings run at once.
 */
export interface RoomCatalog {
  list(query: CatalogQuery): Promise<CatalogPage>
}
