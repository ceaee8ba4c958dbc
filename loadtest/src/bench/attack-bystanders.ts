/**
 * The bystanders of `npm run bench:attack`, in a process of their own: the attacker's sockets keep
 * the bench's event loop busy, and sharing it would time our own client's delays as the server's.
 * Driven over IPC: started with the rooms' URLs, told each phase, asked to stop; it answers with
 * its histograms, encoded.
 */
import { encodeHistogram } from '../measurement/histogram.js'
import { bystanders } from './attack-clients.js'

/** From the parent: start with these rooms, move to a phase, or stop and report. */
export type BystanderCommand =
  | { start: { urls: string[]; intervalMs: number } }
  | { phase: 'attack' | 'after' }
  | { stop: true }

/** To the parent: started, or stopped with what was measured. */
export type BystanderReport =
  | { started: true }
  | { quiet: string | null; attack: string | null; lost: number }
  | { failed: string }

const send = (report: BystanderReport) => process.send?.(report)
let running: Awaited<ReturnType<typeof bystanders>> | null = null

process.on('message', (command: BystanderCommand) => {
  void (async () => {
    if ('start' in command) {
      running = await bystanders(command.start.urls, command.start.intervalMs)
      send({ started: true })
    } else if ('phase' in command && running) {
      running.phase = command.phase
    } else if ('stop' in command && running) {
      await running.stop()
      send({
        quiet: encodeHistogram(running.histograms.quiet),
        attack: encodeHistogram(running.histograms.attack),
        lost: running.lost,
      })
      process.disconnect()
    }
  })().catch((error: Error) => send({ failed: error.message }))
})
