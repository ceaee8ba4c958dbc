import type { MetadataSink } from '../ports/metadata-sink.js'

/** Stands in for the Postgres sink until the dashboard (issue #5) needs the data. */
export class NoopMetadataSink implements MetadataSink {
  record(): void {}
  async close(): Promise<void> {}
}
