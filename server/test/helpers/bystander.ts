import { connectSynced, eventually, uniqueRoom } from './clients.js'

export interface Bystanders {
  /** Stops probing; every probe's round trip in ms, or fails if one never arrived. */
  stop(): Promise<number[]>
}

/**
 * Two clients in a room of their own that keep editing while a test attacks the server: each
 * edit's trip from one to the other is timed, so a stalled event loop or a starved room shows.
 */
export async function startBystanders(
  wsUrl: string,
  params: Record<string, string> = {},
  intervalMs = 50,
): Promise<Bystanders> {
  const room = uniqueRoom('bystander')
  const [writer, reader] = await Promise.all([
    connectSynced(wsUrl, room, params),
    connectSynced(wsUrl, room, params),
  ])
  const sentAt = new Map<number, number>()
  const latencies: number[] = []
  reader.doc.getMap<number>('probe').observe((event) => {
    for (const key of event.keysChanged) {
      const started = sentAt.get(Number(key))
      if (started !== undefined) latencies.push(performance.now() - started)
    }
  })
  let next = 0
  const probe = () => {
    sentAt.set(next, performance.now())
    writer.doc.getMap<number>('probe').set(String(next), next)
    next++
  }
  const timer = setInterval(probe, intervalMs)
  return {
    stop: async () => {
      clearInterval(timer)
      probe() // one more after the attack, however short it was
      await eventually(() => latencies.length === next, `all ${next} bystander edits arrive`)
      writer.destroy()
      reader.destroy()
      return latencies
    },
  }
}
