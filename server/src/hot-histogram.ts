import type { Metric, Registry } from 'prom-client'

/**
 * A Prometheus histogram for the hot path: an observation is a bucket search and three additions
 * on preallocated numbers (prom-client's `observe` allocates label objects and a closure per call).
 * Exported through the registry like any prom-client metric, built only when scraped.
 */
export class HotHistogram {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  /** Per bucket, not cumulative; the last one is +Inf. */
  readonly #counts: Float64Array
  #sum = 0
  #count = 0

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    this.#counts = new Float64Array(bounds.length + 1)
    registry.registerMetric(this as unknown as Metric)
  }

  observe(value: number): void {
    let bucket = 0
    while (bucket < this.bounds.length && value > (this.bounds[bucket] as number)) bucket++
    this.#counts[bucket] = (this.#counts[bucket] as number) + 1
    this.#sum += value
    this.#count++
  }

  /** What prom-client's registry reads when scraped. */
  get() {
    let cumulative = 0
    const bucket = `${this.name}_bucket`
    const values = this.bounds.map((le, i) => {
      cumulative += this.#counts[i] as number
      return { labels: { le }, value: cumulative, metricName: bucket }
    })
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: [
        ...values,
        { labels: { le: '+Inf' }, value: this.#count, metricName: bucket },
        { labels: {}, value: this.#sum, metricName: `${this.name}_sum` },
        { labels: {}, value: this.#count, metricName: `${this.name}_count` },
      ],
    }
  }

  reset(): void {
    this.#counts.fill(0)
    this.#sum = 0
    this.#count = 0
  }
}
