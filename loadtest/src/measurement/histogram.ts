import {
  build,
  decodeFromCompressedBase64,
  encodeIntoCompressedBase64,
  type Histogram,
} from 'hdr-histogram-js'

/** Latencies are recorded in whole microseconds and reported in milliseconds. */
export function newHistogram(): Histogram {
  return build({ numberOfSignificantValueDigits: 3, lowestDiscernibleValue: 1 })
}

export function recordMs(histogram: Histogram, milliseconds: number): void {
  histogram.recordValue(Math.max(1, Math.round(milliseconds * 1000)))
}

/** What crosses the wire between agent and coordinator: compact, and merges without loss. */
export function encodeHistogram(histogram: Histogram): string | null {
  return histogram.totalCount === 0 ? null : encodeIntoCompressedBase64(histogram)
}

export function addEncoded(into: Histogram, encoded: string | null): void {
  if (!encoded) return
  const decoded = decodeFromCompressedBase64(encoded)
  into.add(decoded)
  decoded.destroy()
}

export interface LatencySummary {
  count: number
  min: number
  mean: number
  p50: number
  p95: number
  p99: number
  max: number
}

const ms = (micros: number) => Math.round(micros) / 1000

export function summarize(histogram: Histogram): LatencySummary {
  if (histogram.totalCount === 0) return { count: 0, min: 0, mean: 0, p50: 0, p95: 0, p99: 0, max: 0 }
  return {
    count: histogram.totalCount,
    min: ms(histogram.minNonZeroValue),
    mean: ms(histogram.mean),
    p50: ms(histogram.getValueAtPercentile(50)),
    p95: ms(histogram.getValueAtPercentile(95)),
    p99: ms(histogram.getValueAtPercentile(99)),
    // The 100th percentile rather than maxValue: the same figure whether or not histograms were merged.
    max: ms(histogram.getValueAtPercentile(100)),
  }
}
