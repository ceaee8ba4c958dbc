import type { Report } from './report-schema.js'

const LABELS = {
  connect: 'WS connect + sync',
  update: 'Update broadcast',
  presence: 'Presence broadcast',
} as const

/** The fixed-width summary printed at the end of a run: grep-friendly, one metric per line. */
export function formatTable(report: Report): string {
  const { latency, counts, drops, convergence, server, workload } = report
  const errorsOf = {
    connect: counts.connectErrors,
    update: drops.updates,
    presence: drops.presence,
  }
  const cell = (value: number) => value.toFixed(1).padStart(9)
  const lines = [
    `${workload.name}: ${workload.rooms} rooms x ${workload.perRoom} users = ${workload.users} users, ${workload.durationSeconds}s after a ${workload.rampSeconds}s ramp${workload.realClients ? ' (client library)' : ''}`,
    '',
    `${'metric'.padEnd(20)} ${'count'.padStart(8)} ${'errors'.padStart(7)} ${'p50(ms)'.padStart(9)} ${'p95(ms)'.padStart(9)} ${'p99(ms)'.padStart(9)} ${'max(ms)'.padStart(9)}`,
    `${'-'.repeat(20)} ${'-'.repeat(8)} ${'-'.repeat(7)} ${'-'.repeat(9)} ${'-'.repeat(9)} ${'-'.repeat(9)} ${'-'.repeat(9)}`,
  ]
  for (const metric of ['connect', 'update', 'presence'] as const) {
    const l = latency[metric]
    lines.push(
      `${LABELS[metric].padEnd(20)} ${String(l.count).padStart(8)} ${String(errorsOf[metric]).padStart(7)} ${cell(l.p50)} ${cell(l.p95)} ${cell(l.p99)} ${cell(l.max)}`,
    )
  }
  const mib = (bytes: number | null) => (bytes === null ? '-' : `${(bytes / 2 ** 20).toFixed(1)} MiB`)
  lines.push(
    '',
    `errors: ${counts.connectErrors} connect, ${counts.errors} other, ${counts.unexpectedCloses} unexpected closes; drops: ${drops.updates} updates, ${drops.presence} presence`,
    `convergence: ${convergence.converged}/${convergence.rooms} rooms hold the observer's state`,
    `sent: ${counts.updatesSent} updates, ${counts.presenceSent} presence; received: ${counts.framesReceived} messages, ${mib(counts.bytesReceived)}`,
    server.cpuSeconds === null
      ? 'server: no CPU/RSS figures (pass --server-pid, or expose /metrics)'
      : `server (${report.target.statsSource}): cpu mean ${server.cpuPercent.mean}% max ${server.cpuPercent.max}%, rss ${mib(server.rssBytes.baseline)} -> max ${mib(server.rssBytes.max)}; ${server.cpuMicrosecondsPerDeliveredMessage ?? '-'} us cpu per delivered message, ${server.rssBytesPerUser === null ? '-' : (server.rssBytesPerUser / 1024).toFixed(1)} KiB per user`,
    steadyLine(report),
    `generator: ${report.agents.map((a) => `${a.agent} cpu mean ${a.generatorCpuPercent.mean}% max ${a.generatorCpuPercent.max}%`).join('; ')}`,
  )
  for (const warning of report.warnings) lines.push(`warning: ${warning}`)
  return lines.join('\n')
}

function steadyLine({ steady }: Report): string {
  const kib = steady.rssBytesPerUser === null ? '-' : (steady.rssBytesPerUser / 1024).toFixed(1)
  return [
    `steady state (seconds ${steady.fromSecond}-${steady.toSecond}):`,
    `update p99 ${steady.latency.update.p99}ms,`,
    `presence p99 ${steady.latency.presence.p99}ms,`,
    `${steady.cpuMicrosecondsPerDeliveredMessage ?? '-'} us server cpu per delivered message,`,
    `${kib} KiB server RSS per user`,
  ].join(' ')
}
