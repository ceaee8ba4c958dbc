import type { ECSClient, Task } from '@aws-sdk/client-ecs'
import type { RunSettings } from '../options.js'
import type { Report } from '../reporting/report-schema.js'
import { type ConnectedAgent, Coordinator } from './coordinator.js'

/** Where and how to start the agents: the task definition and network the stack's outputs name. */
export interface EcsSettings {
  agents: number
  cluster: string
  taskDefinition: string
  subnets: string[]
  securityGroups: string[]
  assignPublicIp: boolean
  /** Unset: the cluster ARN's, else the SDK's default (AWS_REGION, the profile). */
  region: string | undefined
  /** What the agents dial; without a port, the port the coordinator listens on. */
  advertiseUrl: string
  joinTimeoutSeconds: number
  host: string
  port: number
  joinToken: string
}

/** The container in the load-agent task definition (infra/lib/load-agents.ts). */
export const AGENT_CONTAINER = 'agent'
const RUN_TASK_BATCH = 10
const DESCRIBE_BATCH = 100
const POLL_MS = 3000

export class EcsRunError extends Error {
  constructor(
    readonly code: 'RUN_TASK_FAILED' | 'AGENTS_DID_NOT_JOIN' | 'AGENT_TASK_STOPPED',
    message: string,
  ) {
    super(message)
  }
}

/**
 * A run on agents started for it alone: listen, start `agents` Fargate tasks that dial back with the
 * join token, run once they have all joined, and stop every task started, whatever happens
 * (the run failing, Ctrl-C, SIGTERM). Nothing is left running, or billed, between runs.
 */
export async function runOnEcs(settings: RunSettings, ecs: EcsSettings): Promise<Report> {
  const client = await ecsClient(ecs)
  const coordinator = await Coordinator.listen(ecs)
  const advertised = /^wss?:\/\/[^/]+:\d+/.test(ecs.advertiseUrl)
    ? ecs.advertiseUrl
    : ecs.advertiseUrl.replace(/^(wss?:\/\/[^/]+)/, `$1:${new URL(coordinator.url).port}`)
  console.error(`coordinator listening on ${coordinator.url}; agents dial ${advertised}`)
  const fleet = new TaskFleet(client, ecs)
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`${signal}: stopping the agents' tasks`)
    coordinator.close()
    void fleet
      .stopAll(`symphony-loadtest: ${signal}`)
      .finally(() => process.exit(signal === 'SIGINT' ? 130 : 143))
  }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  try {
    // Listening for agents before the first task starts: none is turned away as unexpected.
    const joined = coordinator.gather(ecs.agents)
    await fleet.start(advertised)
    const agents = await waitForAgents(joined, coordinator, fleet, ecs)
    return await coordinator.run(settings, agents)
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    coordinator.close()
    await fleet.stopAll('symphony-loadtest: the run ended')
  }
}

async function ecsClient(ecs: EcsSettings): Promise<ECSClient> {
  // Loaded here only: agents and local runs never need the SDK.
  const { ECSClient } = await import('@aws-sdk/client-ecs')
  const endpoint = process.env.AWS_ENDPOINT_URL_ECS ?? process.env.AWS_ENDPOINT_URL
  const region = ecs.region ?? /^arn:aws[a-z-]*:ecs:([a-z0-9-]+):/.exec(ecs.cluster)?.[1]
  return new ECSClient({
    ...(region ? { region } : {}),
    ...(endpoint ? { endpoint } : {}),
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 30_000 },
  })
}

/** The tasks this run started, each stopped exactly once. */
class TaskFleet {
  readonly arns: string[] = []
  #stopping: Promise<void> | undefined

  constructor(
    private readonly client: ECSClient,
    private readonly ecs: EcsSettings,
  ) {}

  async start(coordinatorUrl: string): Promise<void> {
    const { RunTaskCommand } = await import('@aws-sdk/client-ecs')
    const { ecs } = this
    for (let started = 0; started < ecs.agents; started += RUN_TASK_BATCH) {
      const count = Math.min(RUN_TASK_BATCH, ecs.agents - started)
      const answer = await this.client.send(
        new RunTaskCommand({
          cluster: ecs.cluster,
          taskDefinition: ecs.taskDefinition,
          launchType: 'FARGATE',
          count,
          startedBy: 'symphony-loadtest',
          networkConfiguration: {
            awsvpcConfiguration: {
              subnets: ecs.subnets,
              securityGroups: ecs.securityGroups,
              assignPublicIp: ecs.assignPublicIp ? 'ENABLED' : 'DISABLED',
            },
          },
          overrides: {
            containerOverrides: [
              {
                name: AGENT_CONTAINER,
                command: ['agent', '--once'],
                environment: [
                  { name: 'LOADTEST_COORDINATOR_URL', value: coordinatorUrl },
                  { name: 'LOADTEST_JOIN_TOKEN', value: ecs.joinToken },
                ],
              },
            ],
          },
        }),
      )
      for (const task of answer.tasks ?? []) {
        if (!task.taskArn) continue
        this.arns.push(task.taskArn)
        console.error(`started task ${task.taskArn}`)
      }
      const failures = answer.failures ?? []
      if (failures.length > 0 || (answer.tasks ?? []).length < count) {
        throw new EcsRunError(
          'RUN_TASK_FAILED',
          `ECS started ${this.arns.length} of ${ecs.agents} agent tasks: ${failures.map((f) => `${f.arn ?? '?'} ${f.reason ?? ''} ${f.detail ?? ''}`.trim()).join('; ') || 'no reason given'}`,
        )
      }
    }
  }

  async describe(): Promise<Task[]> {
    const { DescribeTasksCommand } = await import('@aws-sdk/client-ecs')
    const tasks: Task[] = []
    for (let i = 0; i < this.arns.length; i += DESCRIBE_BATCH) {
      const answer = await this.client.send(
        new DescribeTasksCommand({
          cluster: this.ecs.cluster,
          tasks: this.arns.slice(i, i + DESCRIBE_BATCH),
        }),
      )
      tasks.push(...(answer.tasks ?? []))
    }
    return tasks
  }

  stopAll(reason: string): Promise<void> {
    this.#stopping ??= (async () => {
      const { StopTaskCommand } = await import('@aws-sdk/client-ecs')
      const outcomes = await Promise.allSettled(
        this.arns.map((task) =>
          this.client.send(new StopTaskCommand({ cluster: this.ecs.cluster, task, reason })),
        ),
      )
      outcomes.forEach((outcome, i) => {
        if (outcome.status === 'rejected')
          console.error(`could not stop task ${this.arns[i]}: ${(outcome.reason as Error).message}`)
      })
      const stopped = outcomes.filter((o) => o.status === 'fulfilled').length
      if (this.arns.length > 0) console.error(`stopped ${stopped} of ${this.arns.length} agent task(s)`)
    })()
    return this.#stopping
  }
}

/**
 * Resolves once every agent has joined. Fails early when a task stops before its agent joined (an
 * image that cannot be pulled, a crash), and after the timeout, naming each task and its state.
 */
async function waitForAgents(
  joined: Promise<ConnectedAgent[]>,
  coordinator: Coordinator,
  fleet: TaskFleet,
  ecs: EcsSettings,
): Promise<ConnectedAgent[]> {
  const deadline = Date.now() + ecs.joinTimeoutSeconds * 1000
  let timer: NodeJS.Timeout | undefined
  const wait = (ms: number) =>
    new Promise<'tick'>((resolve) => {
      timer = setTimeout(() => resolve('tick'), ms)
    })
  try {
    for (;;) {
      const outcome = await Promise.race([
        joined,
        wait(Math.min(POLL_MS, Math.max(0, deadline - Date.now()))),
      ])
      if (outcome !== 'tick') return outcome
      const tasks = await fleet.describe()
      const stopped = tasks.filter((task) => task.lastStatus === 'STOPPED')
      if (stopped.length > 0) {
        throw new EcsRunError(
          'AGENT_TASK_STOPPED',
          `${stopped.length} agent task(s) stopped before joining (${coordinator.joined.length}/${ecs.agents} joined):\n${describeTasks(stopped)}`,
        )
      }
      if (Date.now() >= deadline) {
        throw new EcsRunError(
          'AGENTS_DID_NOT_JOIN',
          `only ${coordinator.joined.length} of ${ecs.agents} agents joined within ${ecs.joinTimeoutSeconds}s (can the tasks reach the advertised URL?):\n${describeTasks(tasks)}`,
        )
      }
    }
  } finally {
    clearTimeout(timer)
  }
}

function describeTasks(tasks: Task[]): string {
  return tasks
    .map((task) => {
      const container = task.containers?.find((c) => c.name === AGENT_CONTAINER)
      const reasons = [task.stoppedReason, container?.reason].filter(Boolean).join('; ')
      return `  ${task.taskArn} ${task.lastStatus ?? '?'}${reasons ? `: ${reasons}` : ''}`
    })
    .join('\n')
}
