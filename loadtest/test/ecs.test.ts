import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, request, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import {
  CreateClusterCommand,
  DescribeTasksCommand,
  ECSClient,
  RegisterTaskDefinitionCommand,
  StopTaskCommand,
  type Task,
} from '@aws-sdk/client-ecs'
import { type StartedServer, startSymphony } from '../src/bench/servers.js'
import type { Report } from '../src/reporting/report-schema.js'
import { type Finished, runCli, startCoordinator } from './helpers/cli.js'

const SECRET = 'the-ecs-tests-auth-secret-32-chars-or-more'
const REGION = 'eu-west-1'
const moto = process.env.SYMPHONY_TEST_AWS_ENDPOINT_URL

interface Call {
  action: string
  body: Record<string, unknown>
}

/**
 * Stands between the CLI and moto, keeping each ECS call's action and parameters. moto 5.2.5 cannot
 * run an awsvpc task (building its network interface fails), so the test's task definition is a
 * bridge-mode one, for which moto keeps no network configuration: the recorded RunTask call shows it.
 */
async function recordingEcs(target: string): Promise<{ url: string; calls: Call[]; server: Server }> {
  const calls: Call[] = []
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = []
    incoming.on('data', (chunk) => chunks.push(chunk))
    incoming.on('end', () => {
      const body = Buffer.concat(chunks)
      const action = String(incoming.headers['x-amz-target'] ?? '').split('.')[1] ?? ''
      calls.push({ action, body: body.length ? JSON.parse(body.toString()) : {} })
      const forward = request(
        new URL(incoming.url ?? '/', target),
        { method: incoming.method, headers: incoming.headers },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(outgoing)
        },
      )
      forward.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, calls, server }
}

/** One EC2 query-protocol call to moto (the test's only EC2 need: a subnet and a security group to name). */
async function ec2(params: Record<string, string>, field: string): Promise<string> {
  const answer = await fetch(moto as string, {
    method: 'POST',
    body: new URLSearchParams({ ...params, Version: '2016-11-15' }),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `AWS4-HMAC-SHA256 Credential=test/20260101/${REGION}/ec2/aws4_request, SignedHeaders=host, Signature=0`,
    },
  })
  const value = new RegExp(`<${field}>([^<]+)</${field}>`).exec(await answer.text())?.[1]
  assert.ok(value, `${params.Action}: no ${field}`)
  return value
}

describe('symphony-loadtest ecs, against moto', {
  skip: moto ? false : 'needs SYMPHONY_TEST_AWS_ENDPOINT_URL',
}, () => {
  let server: StartedServer
  let folder: string
  let proxy: Awaited<ReturnType<typeof recordingEcs>>
  let ecs: ECSClient
  let cluster: string
  let taskDefinition: string
  let subnets: string[]
  let securityGroup: string
  const credentials = { AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_REGION: REGION }

  before(async () => {
    // No metadata database: starting the embedded one costs about 3 s, and nothing here reads it.
    server = await startSymphony({ env: { AUTH_SECRET: SECRET, DATABASE_URL: 'none' } })
    folder = mkdtempSync(join(tmpdir(), 'loadtest-ecs-'))
    proxy = await recordingEcs(moto as string)
    // ECS keeps a task running until it is stopped; moto's default walks it to STOPPED on its own.
    const transition = await fetch(`${moto}/moto-api/state-manager/set-transition`, {
      method: 'POST',
      body: JSON.stringify({ model_name: 'ecs::task', transition: { progression: 'manual', times: 1e9 } }),
    })
    assert.equal(transition.status, 201)
    ecs = new ECSClient({
      region: REGION,
      endpoint: moto,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    })
    const vpc = await ec2({ Action: 'CreateVpc', CidrBlock: '10.9.0.0/16' }, 'vpcId')
    subnets = [
      await ec2({ Action: 'CreateSubnet', VpcId: vpc, CidrBlock: '10.9.1.0/24' }, 'subnetId'),
      await ec2({ Action: 'CreateSubnet', VpcId: vpc, CidrBlock: '10.9.2.0/24' }, 'subnetId'),
    ]
    const group = { Action: 'CreateSecurityGroup', VpcId: vpc, GroupDescription: 'agents' }
    securityGroup = await ec2({ ...group, GroupName: `agents-${randomBytes(4).toString('hex')}` }, 'groupId')
    cluster = `loadtest-${randomBytes(4).toString('hex')}`
    await ecs.send(new CreateClusterCommand({ clusterName: cluster }))
    const registered = await ecs.send(
      new RegisterTaskDefinitionCommand({
        family: `${cluster}-agent`,
        // Not marked FARGATE: moto would make it awsvpc, which it cannot run (see recordingEcs).
        cpu: '1024',
        memory: '2048',
        containerDefinitions: [{ name: 'agent', image: 'symphony-loadtest', memory: 2048 }],
      }),
    )
    taskDefinition = registered.taskDefinition?.taskDefinitionArn ?? ''
  })
  after(async () => {
    await server.stop()
    proxy.server.close()
    ecs.destroy()
    rmSync(folder, { recursive: true, force: true })
  })

  const describeTasks = async (arns: string[]): Promise<Task[]> =>
    (await ecs.send(new DescribeTasksCommand({ cluster, tasks: arns }))).tasks ?? []

  /**
   * Runs `symphony-loadtest ecs`; `onTask` plays ECS for each task it starts (moto runs no
   * containers), e.g. by starting an agent process with the command and environment RunTask gave it.
   */
  function ecsRun(args: string[], onTask: (task: Task, child: ReturnType<typeof runCli>['child']) => void) {
    const seen = new Set<string>()
    const run = startCoordinator(
      ['ecs', '--cluster', cluster, '--task-definition', taskDefinition, '--subnets', subnets.join(',')]
        .concat([
          '--security-groups',
          securityGroup,
          '--advertise-url',
          'ws://127.0.0.1',
          '--host',
          '127.0.0.1',
        ])
        .concat(['--port', '0', '--url', server.url, '--quiet', ...args]),
      { ...credentials, AWS_ENDPOINT_URL: proxy.url, LOADTEST_TOKEN_SECRET: SECRET },
      (stderr) => {
        for (const [, arn = ''] of stderr.matchAll(/^started task (\S+)$/gm)) {
          if (seen.has(arn)) continue
          seen.add(arn)
          void describeTasks([arn]).then(([task]) => task && onTask(task, run.child))
        }
      },
    )
    return { ...run, tasks: seen }
  }

  /** What ECS would run for `task`: the image's entry point with the overridden command and environment. */
  function startAgent(task: Task): Promise<Finished> {
    const override = task.overrides?.containerOverrides?.find((o) => o.name === 'agent')
    const env = Object.fromEntries((override?.environment ?? []).map((e) => [e.name ?? '', e.value ?? '']))
    return runCli(override?.command ?? [], undefined, undefined, env).done
  }

  async function assertAllStopped(arns: Set<string>, reason: RegExp): Promise<void> {
    assert.ok(arns.size > 0)
    for (const task of await describeTasks([...arns])) {
      assert.equal(task.desiredStatus, 'STOPPED', task.taskArn)
      assert.equal(task.lastStatus, 'STOPPED', task.taskArn)
      assert.match(task.stoppedReason ?? '', reason)
    }
    const stops = proxy.calls.filter((c) => c.action === 'StopTask' && arns.has(String(c.body.task)))
    assert.equal(stops.length, arns.size, 'each task stopped once')
  }

  test('starts the agent tasks for the run, gives them the coordinator and a join token, runs, and stops them all; a crossed threshold exits 99', async () => {
    const json = join(folder, 'ecs.json')
    const agents: Promise<Finished>[] = []
    const run = ecsRun(
      ['--agents', '2', '--rooms', '3', '--duration', '2', '--ramp', '0', '--json', json].concat([
        '--html',
        join(folder, 'ecs.html'),
        '--threshold',
        'drops==0',
        '--threshold',
        'doc.p99<0.001',
      ]),
      (task) => agents.push(startAgent(task)),
    )
    const finished = await run.done
    assert.equal(finished.code, 99, finished.stderr)
    assert.match(finished.stdout, /^✓ drops==0/m)
    assert.match(finished.stdout, /^✗ doc.p99<0.001/m)
    assert.equal(agents.length, 2)
    for (const agent of await Promise.all(agents)) assert.equal(agent.code, 0, agent.stderr)
    const report: Report = JSON.parse(readFileSync(json, 'utf8'))
    assert.equal(report.agents.length, 2)
    assert.deepEqual(report.convergence, { rooms: 3, converged: 3, failures: [] })
    assert.equal(report.latency.connect.count, 12)

    const runTask = proxy.calls.filter((c) => c.action === 'RunTask')
    assert.equal(runTask.length, 1)
    const port = /coordinator listening on ws:\/\/127\.0\.0\.1:(\d+)/.exec(finished.stderr)?.[1]
    // The SDK adds an idempotency token of its own.
    const { clientToken, ...call } = (runTask[0]?.body ?? {}) as Record<string, unknown>
    assert.equal(typeof clientToken, 'string')
    const [container] = (
      call.overrides as { containerOverrides: { environment: { name: string; value: string }[] }[] }
    ).containerOverrides
    const joinToken = container?.environment.find((e) => e.name === 'LOADTEST_JOIN_TOKEN')?.value ?? ''
    assert.ok(joinToken.length >= 16 && !joinToken.includes(SECRET))
    assert.deepEqual(call, {
      cluster,
      taskDefinition,
      launchType: 'FARGATE',
      count: 2,
      startedBy: 'symphony-loadtest',
      networkConfiguration: {
        awsvpcConfiguration: {
          subnets,
          securityGroups: [securityGroup],
          assignPublicIp: 'DISABLED',
        },
      },
      overrides: {
        containerOverrides: [
          {
            name: 'agent',
            command: ['agent', '--once'],
            environment: [
              { name: 'LOADTEST_COORDINATOR_URL', value: `ws://127.0.0.1:${port}` },
              { name: 'LOADTEST_JOIN_TOKEN', value: joinToken },
            ],
          },
        ],
      },
    })
    assert.ok(!JSON.stringify(proxy.calls).includes(SECRET), 'the secret is in no ECS call')
    await assertAllStopped(run.tasks, /^symphony-loadtest: the run ended$/)
  })

  test('a task that stops before its agent joins fails the run at once, with ECS’s reason; every task is stopped', async () => {
    const agents: Promise<Finished>[] = []
    let first = true
    const run = ecsRun(
      ['--agents', '2', '--rooms', '2', '--duration', '1', '--join-timeout', '120'],
      (task) => {
        if (first) agents.push(startAgent(task))
        else
          void ecs.send(
            new StopTaskCommand({
              cluster,
              task: task.taskArn,
              reason: 'CannotPullContainerError: pull access denied',
            }),
          )
        first = false
      },
    )
    const finished = await run.done
    assert.equal(finished.code, 1)
    assert.match(finished.stderr, /1 agent task\(s\) stopped before joining \(1\/2 joined\)/)
    assert.match(finished.stderr, /STOPPED: CannotPullContainerError: pull access denied/)
    assert.match(finished.stderr, /stopped 2 of 2 agent task\(s\)/)
    for (const agent of await Promise.all(agents)) assert.notEqual(agent.code, 0, 'its coordinator went away')
    for (const task of await describeTasks([...run.tasks])) assert.equal(task.desiredStatus, 'STOPPED')
  })

  test('agents that never join: after --join-timeout every task is stopped and the run fails, naming them', async () => {
    const run = ecsRun(['--agents', '1', '--rooms', '1', '--duration', '1', '--join-timeout', '1'], () => {})
    const finished = await run.done
    assert.equal(finished.code, 1)
    assert.match(finished.stderr, /only 0 of 1 agents joined within 1s/)
    assert.match(finished.stderr, /^ {2}arn:aws:ecs:\S+ RUNNING$/m)
    await assertAllStopped(run.tasks, /^symphony-loadtest: the run ended$/)
  })

  test('SIGTERM while waiting for the agents stops every task started', async () => {
    const run = ecsRun(['--agents', '1', '--rooms', '1', '--duration', '1'], (_task, child) =>
      child.kill('SIGTERM'),
    )
    const finished = await run.done
    assert.equal(finished.code, 143, finished.stderr)
    await assertAllStopped(run.tasks, /^symphony-loadtest: SIGTERM$/)
  })
})
