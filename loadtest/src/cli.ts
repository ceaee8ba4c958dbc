import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { defaultAgentName, runAgent } from './distribution/agent.js'
import { COORDINATOR_PORT } from './distribution/agent-protocol.js'
import { type CoordinatorSettings, newJoinToken, runCoordinator } from './distribution/coordinator.js'
import { EcsRunError, type EcsSettings, runOnEcs } from './distribution/ecs-run.js'
import { runLocal } from './distribution/local-run.js'
import {
  type OptionValues,
  parseCommandLine,
  REPORTS_FOLDER,
  type RunSettings,
  runSettings,
  UsageError,
} from './options.js'
import { publish } from './reporting/outputs.js'
import { type Report, reportJsonSchema } from './reporting/report-schema.js'
import { judge, THRESHOLD_HELP, THRESHOLDS_CROSSED_EXIT_CODE } from './reporting/thresholds.js'
import { JOIN_TOKEN, readSecret } from './secrets.js'
import { describeSample, describeVerdict, runSoak, SOAK_OPTIONS, soakSettings } from './soak.js'
import { WORKLOADS } from './virtual-users/workloads.js'

const USAGE = `Usage:
  symphony-loadtest [run] [options]              drive the load from this process
  symphony-loadtest coordinator --agents N [options]
                                                 hand the rooms to N agents and merge their reports
  symphony-loadtest ecs --agents N --cluster C --task-definition ARN --subnets A,B
                    --security-groups SG --advertise-url URL [--region R] [options]
                                                 start N agent tasks on ECS for this run only, coordinate
                                                 them, and stop every task when the run ends
  symphony-loadtest agent --coordinator URL [--join-token-file F] [--once] [--name NAME]
                                                 take rooms from a coordinator (again and again unless --once);
                                                 or LOADTEST_COORDINATOR_URL; the join token from
                                                 LOADTEST_JOIN_TOKEN or --join-token-file
  symphony-loadtest soak [options] [--churn S] [--sample S]
                                                 hours of rooms coming and going; samples the server's
                                                 heap, RSS and open rooms, and says whether they stay flat
  symphony-loadtest schema                       print the JSON report's JSON Schema

Run options:
  --url URL[,URL…]      the sync server, or servers: each room's users take them in turn
                        (default ws://127.0.0.1:1234)
  --placement P         spread (a room's users take the servers in turn, each room starting one
                        further: default) | room (every
                        user of a room on one server, the rooms taking the servers in turn)
  --workload NAME       ${Object.values(WORKLOADS)
    .map((w) => `${w.name}`)
    .join(' | ')} (default symphony)
  --rooms N             rooms (default: the workload's)
  --per-room N          users per room, the observer included (default: the workload's)
  --duration S          seconds of steady load after the ramp (default 30)
  --ramp S              seconds over which rooms join (default 10)
  --doc-rate R          document updates per writer per second
  --presence-rate R     presence updates per user per second
  --token-secret-file F mint an HS256 token per user with the secret in file F, or in
                        LOADTEST_TOKEN_SECRET (never on the command line: npm echoes it)
  --real-clients        run the client library instead of light protocol clients
  --protocol NAME       the server's framing: y-websocket (default) or hocuspocus
  --server-pid PID[,…]  read the server's CPU and memory from /proc, summed over the processes
                        (e.g. two servers and Redis; default: the servers' /metrics)
  --room-prefix P       room names P-0, P-1, … (default loadtest-<random>)
  --json FILE           every figure as JSON (default loadtest-results/<time>-<workload>.json)
  --html FILE           the HTML report with charts (default loadtest-results/<time>-<workload>.html)
  --quiet               no progress line
  --threshold EXPR      pass/fail, repeatable, as k6's: "metric op value" (op: < <= > >= == !=),
                        e.g. --threshold "doc.p99<50" --threshold "drops==0"; exit code 99 when
                        any is crossed. Metrics:
${THRESHOLD_HELP.replace(/^ {2}/gm, '                          ')}
  --token-margin S      the users' tokens expire S seconds after the load's planned end (default 60)
Soak options: --url, --rooms (default 20, each replaced when its users leave), --per-room (default 4),
  --duration S (default 3600), --churn S (mean seconds a room's users stay, default 60),
  --sample S (default 30), --doc-rate R (default 1), --token-secret-file, --room-prefix, --json FILE, --quiet;
  exits 1 when memory or open rooms keep growing
Coordinator options (coordinator, ecs): --agents N (default 1), --host H (default 0.0.0.0),
  --port P (default ${COORDINATOR_PORT}), --join-token-file F (or LOADTEST_JOIN_TOKEN; default: a random
  one, which \`coordinator\` writes to a file readable by you alone and prints the file's path).
  Agents present it to join; they get their users' tokens, never the secret.
  The coordinator speaks plain ws://: reach it only inside the VPC, or put TLS in front (agents dial wss://).
ECS options: --cluster, --task-definition, --subnets, --security-groups (the stack's outputs),
  --advertise-url URL (what the agents dial; without a port, --port's), --region R,
  --assign-public-ip, --join-timeout S (default 300: then every task is stopped and the run fails)
Exit codes: 0 done, 1 failed, 2 bad options, 99 a threshold crossed

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
      return finish(await runLocal(settings), settings)
    }
    case 'coordinator': {
      const values = parseCommandLine(args, COORDINATOR_OPTIONS)
      const settings = runSettings(values, process.env)
      const coordinator = coordinatorSettings(values)
      if (!readSecret(JOIN_TOKEN, values, process.env)) {
        // Written to a file, not printed: logs are kept and shared, and the token admits agents.
        const file = join(REPORTS_FOLDER, `join-token-${process.pid}`)
        await mkdir(REPORTS_FOLDER, { recursive: true })
        await writeFile(file, `${coordinator.joinToken}\n`, { mode: 0o600 })
        console.error(`join token written to ${file} (agents: --join-token-file or LOADTEST_JOIN_TOKEN)`)
      }
      return finish(await runCoordinator(settings, coordinator), settings)
    }
    case 'ecs': {
      const values = parseCommandLine(args, { ...COORDINATOR_OPTIONS, ...ECS_OPTIONS })
      const settings = runSettings(values, process.env)
      const ecs = ecsSettings(values, coordinatorSettings(values))
      return finish(await runOnEcs(settings, ecs), settings)
    }
    case 'agent': {
      await runAgent(parseAgentArgs(args))
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
      throw new UsageError(`unknown command "${command}" (run, coordinator, ecs, agent, soak, schema)`)
  }
}

/** Prints the thresholds' verdicts with the table and reports; 99 when one was crossed. */
async function finish(report: Report, settings: RunSettings): Promise<number> {
  const judged = { ...report, thresholds: judge(settings.thresholds, report) }
  await publish(judged, settings)
  return judged.thresholds.every((verdict) => verdict.ok) ? 0 : THRESHOLDS_CROSSED_EXIT_CODE
}

const COORDINATOR_OPTIONS = {
  agents: { type: 'string', default: '1' },
  host: { type: 'string', default: '0.0.0.0' },
  port: { type: 'string', default: String(COORDINATOR_PORT) },
  'join-token-file': { type: 'string' },
} as const

const ECS_OPTIONS = {
  cluster: { type: 'string' },
  'task-definition': { type: 'string' },
  subnets: { type: 'string' },
  'security-groups': { type: 'string' },
  'assign-public-ip': { type: 'boolean', default: false },
  region: { type: 'string' },
  'advertise-url': { type: 'string' },
  'join-timeout': { type: 'string', default: '300' },
} as const

function coordinatorSettings(values: OptionValues): CoordinatorSettings {
  const port = Number(values.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port: 0-65535')
  const joinToken = readSecret(JOIN_TOKEN, values, process.env) ?? newJoinToken()
  return { agents: positiveInteger(values.agents, '--agents'), port, host: String(values.host), joinToken }
}

function ecsSettings(values: OptionValues, coordinator: CoordinatorSettings): EcsSettings {
  const required = (flag: string, example: string) => {
    const value = values[flag]
    if (typeof value !== 'string' || value === '') throw new UsageError(`--${flag}: required (${example})`)
    return value
  }
  const list = (flag: string, example: string) => required(flag, example).split(',').filter(Boolean)
  const advertiseUrl = required(
    'advertise-url',
    'where the agents reach this coordinator, e.g. ws://10.0.1.5',
  )
  if (!/^wss?:\/\/[^/]/.test(advertiseUrl) || !URL.canParse(advertiseUrl)) {
    throw new UsageError('--advertise-url: a ws:// or wss:// URL, e.g. ws://10.0.1.5:8700')
  }
  const joinTimeout = positiveInteger(values['join-timeout'], '--join-timeout')
  if (coordinator.agents > 1000) throw new UsageError('--agents: at most 1000')
  return {
    ...coordinator,
    cluster: required('cluster', 'the stack output ClusterName'),
    taskDefinition: required('task-definition', 'the stack output LoadAgentTaskDefinitionArn'),
    subnets: list('subnets', 'the stack output LoadAgentSubnetIds'),
    securityGroups: list('security-groups', 'the stack output LoadAgentSecurityGroupId'),
    assignPublicIp: values['assign-public-ip'] === true,
    region: typeof values.region === 'string' ? values.region : undefined,
    advertiseUrl,
    joinTimeoutSeconds: joinTimeout,
  }
}

function parseAgentArgs(args: string[]) {
  const values = parseCommandLine(args, {
    coordinator: { type: 'string' },
    'join-token-file': { type: 'string' },
    once: { type: 'boolean', default: false },
    name: { type: 'string', default: defaultAgentName() },
  })
  const coordinator = String(values.coordinator ?? process.env.LOADTEST_COORDINATOR_URL ?? '')
  if (!/^wss?:\/\/./.test(coordinator) || !URL.canParse(coordinator)) {
    throw new UsageError(
      '--coordinator: the coordinator URL, e.g. ws://10.0.0.5:8700 (or LOADTEST_COORDINATOR_URL)',
    )
  }
  const joinToken = readSecret(JOIN_TOKEN, values, process.env)
  if (!joinToken) {
    throw new UsageError("the coordinator's join token: set LOADTEST_JOIN_TOKEN or pass --join-token-file")
  }
  return { coordinatorUrl: coordinator, joinToken, once: values.once === true, name: String(values.name) }
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
      error instanceof UsageError
        ? `symphony-loadtest: ${error.message}\n(--help lists the options)`
        : error instanceof EcsRunError
          ? `symphony-loadtest: ${error.message}`
          : error,
    )
    process.exit(error instanceof UsageError ? 2 : 1)
  },
)
