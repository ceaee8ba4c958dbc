import type { MetadataSink, MetadataSinkStats } from '../ports/metadata-sink.js'

/** Keeps no metadata: for tests and for deployments without a dashboard. */
export class NoopMetadataSink implements MetadataSink {
  record(): void {}
  stats(): MetadataSinkStats {
    return { queued: 0, dropped: 0 }
  }
  async close(): Promise<void> {}
}
