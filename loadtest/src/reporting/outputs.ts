import { mkdir, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { Collector } from '../measurement/collector.js'
import type { ServerSampler } from '../measurement/server-stats.js'
import type { RunSettings } from '../options.js'
import { htmlReport } from './html-report.js'
import type { Report } from './report-schema.js'
import { formatTable } from './table.js'
import { describeVerdicts } from './thresholds.js'

/** Prints the progress line each second: in place on a terminal, every 5 s into a log. */
export function showProgress(settings: RunSettings, collector: Collector, server: ServerSampler): () => void {
  if (settings.quiet) return () => {}
  const started = performance.now()
  const total = settings.rampSeconds + settings.durationSeconds
  const tty = process.stderr.isTTY
  let ticks = 0
  const timer = setInterval(() => {
    const line = collector.progressLine((performance.now() - started) / 1000, total, server)
    if (tty) process.stderr.write(`\r${line.slice(0, (process.stderr.columns ?? 200) - 1).padEnd(80)}`)
    else if (++ticks % 5 === 0) process.stderr.write(`${line}\n`)
  }, 1000)
  return () => {
    clearInterval(timer)
    if (tty) process.stderr.write('\n')
  }
}

/** The table on stdout, and the JSON and HTML reports where asked. */
export async function publish(report: Report, settings: RunSettings): Promise<void> {
  console.log(formatTable(report))
  if (report.thresholds.length > 0) console.log(`thresholds:\n${describeVerdicts(report.thresholds)}`)
  for (const [file, content] of [
    [settings.jsonFile, `${JSON.stringify(report, null, 2)}\n`],
    [settings.htmlFile, htmlReport(report)],
  ] as const) {
    await mkdir(dirname(file), { recursive: true })
    await writeFile(file, content)
  }
  console.log(`JSON report: ${settings.jsonFile}\nHTML report: ${settings.htmlFile}`)
}
