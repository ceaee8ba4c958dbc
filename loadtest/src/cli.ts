import { mkdir, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { defaultAgentName, runAgent } from './agent.js'
import { COORDINATOR_PORT } from './agent-protocol.js'
import { runCoordinator } from './coordinator.js'
import { runLocal } from './local-run.js'
import { parseCommandLine, REPORTS_FOLDER, runSettings, UsageError } from './options.js'
import { publish } from './outputs.js'
import { reportJsonSchema } from './report-schema.js'
import { describeSample, describeVerdict, runSoak, SOAK_OPTIONS, soakSettings } from './soak.js'
import { WORKLOADS } from './workloads.js'

const USAGE = `Usage:
  symphony-loadtest [run] [options]              drive the load from this process
  symphony-loadtest coordinator --agents N [options]
                                                 hand the rooms to N agents and merge their reports
  symphony-loadtest agent --coordinator URL [--once] [--name NAME]
                                                 take rooms from a coordinator (again and again unless --once)
  symphony-loadtest soak [options] [--churn S] [--sample S]
                                                 hours of rooms coming and going; samples the server's
                                                 heap, RSS and open rooms, and says whether they stay flat
  symphony-loadtest schema                       print the JSON report's JSON Schema

Run options:
  --url URL[,URL…]      the sync server, or servers: each room's users take them in turn
                        (default ws://127.0.0.1:1234)
  --workload NAME       ${Object.values(WORKLOADS)
    .map((w) => `${w.name}`)
    .join(' | ')} (default symphony)
  --rooms N             rooms (default: the workload's)
  --per-room N          users per room, the observer included (default: the workload's)
  --duration S          seconds of steady load after the ramp (default 30)
  --ramp S              seconds over which rooms join (default 10)
  --doc-rate R          document updates per writer per second
  --presence-rate R     presence updates per user per second
  --token-secret S      mint an HS256 token per user (or LOADTEST_TOKEN_SECRET)
  --real-clients        run the client library instead of light protocol clients
  --protocol NAME       the server's framing: y-websocket (default) or hocuspocus
  --server-pid PID[,…]  read the server's CPU and memory from /proc, summed over the processes
                        (e.g. two servers and Redis; default: the servers' /metrics)
  --room-prefix P       room names P-0, P-1, … (default loadtest-<random>)
  --json FILE           every figure as JSON (default loadtest-results/<time>-<workload>.json)
  --html FILE           the HTML report with charts (default loadtest-results/<time>-<workload>.html)
  --quiet               no progress line
Soak options: --url, --rooms (default 20, each replaced when its users leave), --per-room (default 4),
  --duration S (default 3600), --churn S (mean seconds a room's users stay, default 60),
  --sample S (default 30), --doc-rate R (default 1), --token-secret, --room-prefix, --json FILE, --quiet;
  exits 1 when memory or open rooms keep growing
Coordinator options: --agents N (default 1), --host H (default 0.0.0.0), --port P (default ${COORDINATOR_PORT})

Workloads:
${Object.values(WORKLOADS)
  .map((w) => `  ${w.name.padEnd(12)} ${w.source}`)
  .join('\n')}`

async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv
  const command = first && !first.startsWith('-') ? first : 'run'
  const args = command === first ? rest : argv
  if (args.includes('--help') || args.includes('-h') || command === 'help') {
    console.log(USAGE)
    return 0
  }
  switch (command) {
    case 'run': {
      const settings = runSettings(parseCommandLine(args), process.env)
      const report = await runLocal(settings)
      await publish(report, settings)
      return 0
    }
    case 'coordinator': {
      const values = parseCommandLine(args, {
        agents: { type: 'string', default: '1' },
        host: { type: 'string', default: '0.0.0.0' },
        port: { type: 'string', default: String(COORDINATOR_PORT) },
      })
      const settings = runSettings(values, process.env)
      const agents = positiveInteger(values.agents, '--agents')
      const port = Number(values.port)
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port: 0-65535')
      const report = await runCoordinator(settings, { agents, port, host: String(values.host) })
      await publish(report, settings)
      return 0
    }
    case 'agent': {
      const { coordinator, once, name } = parseAgentArgs(args)
      await runAgent({ coordinatorUrl: coordinator, once, name })
      return 0
    }
    case 'soak': {
      const values = parseCommandLine(args, SOAK_OPTIONS)
      const settings = soakSettings(values, process.env)
      const report = await runSoak(settings, (sample) => {
        if (!values.quiet) console.error(describeSample(sample))
      })
      const json = String(
        values.json ?? `${REPORTS_FOLDER}/${new Date().toISOString().replace(/[:.]/g, '-')}-soak.json`,
      )
      await mkdir(dirname(json), { recursive: true })
      await writeFile(json, `${JSON.stringify(report, null, 2)}\n`)
      console.log(`${describeVerdict(report)}\n  report: ${json}`)
      return report.verdict.flat ? 0 : 1
    }
    case 'schema':
      console.log(JSON.stringify(reportJsonSchema(), null, 2))
      return 0
    default:
      throw new UsageError(`unknown command "${command}" (run, coordinator, agent, soak, schema)`)
  }
}

function parseAgentArgs(args: string[]) {
  const values = parseCommandLine(args, {
    coordinator: { type: 'string' },
    once: { type: 'boolean', default: false },
    name: { type: 'string', default: defaultAgentName() },
  })
  const coordinator = String(values.coordinator ?? '')
  if (!/^wss?:\/\/./.test(coordinator) || !URL.canParse(coordinator)) {
    throw new UsageError('--coordinator: the coordinator URL, e.g. ws://10.0.0.5:8700')
  }
  return { coordinator, once: values.once === true, name: String(values.name) }
}

function positiveInteger(value: unknown, flag: string): number {
  const number = Number(value)
  if (!Number.isInteger(number) || number < 1) throw new UsageError(`${flag}: a whole number of at least 1`)
  return number
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(
      error instanceof UsageError ? `symphony-loadtest: ${error.message}\n(--help lists the options)` : error,
    )
    process.exit(error instanceof UsageError ? 2 : 1)
  },
)
