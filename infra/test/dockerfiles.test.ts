import assert from 'node:assert/strict'
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { eventually } from '@symphony/test-helpers/clients'
import { requireTestServices } from '@symphony/test-helpers/services'
import { freePort, startSymphony } from '../../loadtest/src/bench/servers.js'
import {
  type Instruction,
  parseDockerfile,
  rehearseDockerfile,
  type Stage,
} from './helpers/dockerfile-rehearsal.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const cleanups: (() => void)[] = []
const children: ChildProcess[] = []

after(() => {
  for (const child of children) child.kill('SIGKILL')
  for (const cleanup of cleanups) cleanup()
})

const DOCKERFILE = 'infra/Dockerfile'
const TARGETS = ['sync-server', 'dashboard', 'load-agent'] as const
type Target = (typeof TARGETS)[number]

const finalInstructions = (stages: Stage[], keyword: string): Instruction[] =>
  stages.at(-1)?.instructions.filter((i) => i.keyword === keyword) ?? []

/** The image's own promises: built apart from its build tools, a non-root user, a health check, slim runtime. */
function checkImageShape(stages: Stage[], root: string) {
  assert.ok(stages.length >= 2, 'multi-stage: build tools stay out of the runtime image')
  const users = finalInstructions(stages, 'USER').map((i) => i.args)
  assert.ok(users.length > 0 && !['root', '0'].includes(users.at(-1) ?? ''), 'runs as a non-root user')
  assert.equal(finalInstructions(stages, 'HEALTHCHECK').length, 1)
  for (const devOnly of ['typescript', 'esbuild', 'aws-cdk-lib', 'playwright-core']) {
    assert.ok(!existsSync(join(root, 'node_modules', devOnly)), `${devOnly} is not in the runtime image`)
  }
}

/** Starts the image's CMD in its folder with only `env` (and PATH); resolves once it logs that it listens. */
async function startCmd(stages: Stage[], root: string, env: Record<string, string>) {
  const [cmd] = finalInstructions(stages, 'CMD')
  const [program = '', ...args] = JSON.parse(cmd?.args ?? '[]') as string[]
  const child = spawn(program, args, {
    cwd: root,
    env: { PATH: process.env.PATH, NODE_ENV: 'production', ...env },
  })
  children.push(child)
  let output = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk) => {
      output += chunk
      if (/listening/.test(output)) resolve()
    })
    child.stderr?.on('data', (chunk) => (output += chunk))
    child.on('exit', (code) => reject(new Error(`${program} ${args.join(' ')} exited (${code}):\n${output}`)))
  })
  return { child, output: () => output }
}

/** Runs the image's HEALTHCHECK command; its exit code is what Docker and ECS would see. */
function healthCheck(stages: Stage[], root: string, env: Record<string, string>): number | null {
  const [check] = finalInstructions(stages, 'HEALTHCHECK')
  const [, json = '[]'] = check?.args.split(/\bCMD\s+/) ?? []
  const [, program = '', ...args] = ['CMD', ...(JSON.parse(json) as string[])]
  return spawnSync(program, args, { cwd: root, env: { PATH: process.env.PATH, ...env }, timeout: 10_000 })
    .status
}

function stopped(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code))
    child.kill('SIGTERM')
  })
}

describe('the service images, rehearsed step by step without Docker', () => {
  let roots: Record<Target, string>
  /** The target's stages for the checks: the build stage, then the target itself last. */
  let stagesOf: (target: Target) => Stage[]
  before(async () => {
    const rehearsal = await rehearseDockerfile(ROOT, DOCKERFILE, TARGETS)
    cleanups.push(rehearsal.cleanup)
    roots = rehearsal.roots
    stagesOf = (target) => [rehearsal.stage('build'), rehearsal.stage(target)]
  })

  it('is one Dockerfile on the Node the tests run on, with a target per service, replacing the three copies', () => {
    const stages = parseDockerfile(join(ROOT, DOCKERFILE))
    const pinned = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).devEngines.runtime.version
    assert.equal(process.versions.node, pinned, 'the tests run on the pinned Node')
    assert.match(pinned, /^24\./, 'Node 24 LTS')
    assert.ok(
      stages.every(
        (stage) => stage.from === `node:${pinned}-bookworm-slim` || stages.some((s) => s.name === stage.from),
      ),
      `every stage starts from node:${pinned}-bookworm-slim, directly or through another stage`,
    )
    for (const target of TARGETS)
      assert.ok(
        stages.some((stage) => stage.name === target),
        target,
      )
    for (const old of ['server/Dockerfile', 'dashboard-server/Dockerfile', 'loadtest/Dockerfile']) {
      assert.ok(!existsSync(join(ROOT, old)), `${old} is gone`)
    }
  })

  it('the sync-server target serves, passes its health check and stops on SIGTERM', async () => {
    const root = roots['sync-server']
    const stages = stagesOf('sync-server')
    checkImageShape(stages, root)
    const port = String(await freePort())
    const env = {
      PORT: port,
      HOST: '127.0.0.1',
      AUTH: 'none',
      DATABASE_URL: 'none',
      SNAPSHOTS: `file://${mkdtempSync(join(tmpdir(), 'symphony-image-snapshots-'))}`,
    }
    assert.notEqual(healthCheck(stages, root, env), 0, 'unhealthy before it listens')
    const server = await startCmd(stages, root, env)
    assert.equal(healthCheck(stages, root, env), 0, server.output())
    const page = await fetch(`http://127.0.0.1:${port}/`)
    assert.equal(page.status, 200, 'the demo page is in the image')
    assert.equal(await stopped(server.child), 0, 'a clean exit on SIGTERM')

    // The metadata connection verifies RDS's certificate against the authorities baked in.
    const bundle = readFileSync(join(root, 'certs/aws-rds-ca.pem'), 'utf8')
    const certificates = bundle.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []
    const subjects = certificates.map((pem) => new X509Certificate(pem).subject)
    assert.ok(
      subjects.some((s) => /Amazon RDS us-east-1 Root CA RSA2048 G1/.test(s)),
      'the authority of the CA the stack asks RDS for (RDS_CA_RSA2048_G1)',
    )
  })

  it('the dashboard target starts against Postgres and passes its health check', async () => {
    const root = roots.dashboard
    const stages = stagesOf('dashboard')
    checkImageShape(stages, root)
    const port = String(await freePort())
    const env = {
      DASHBOARD_PORT: port,
      DASHBOARD_HOST: '127.0.0.1',
      DATABASE_URL: requireTestServices().databaseUrl,
      DASHBOARD_TOKEN: 'a-dashboard-token-for-the-image-test',
    }
    const dashboard = await startCmd(stages, root, env)
    assert.equal(healthCheck(stages, root, env), 0, dashboard.output())
    const page = await fetch(`http://127.0.0.1:${port}/`)
    assert.match(await page.text(), /<html/i, 'the page’s files are in the image')
    assert.equal((await fetch(`http://127.0.0.1:${port}/api/rooms`)).status, 401)
    assert.equal(await stopped(dashboard.child), 0)
  })

  it('the load-agent target is the harness: a coordinator and an agent from the image drive a real server', async () => {
    const root = roots['load-agent']
    const stages = stagesOf('load-agent')
    checkImageShape(stages, root)
    for (const devOnly of ['ajv', 'y-websocket-reference']) {
      assert.ok(!existsSync(join(root, 'node_modules', devOnly)), `${devOnly} is not in the runtime image`)
    }
    const [entrypoint] = finalInstructions(stages, 'ENTRYPOINT')
    const [program = '', ...entry] = JSON.parse(entrypoint?.args ?? '[]') as string[]
    // No metadata database: starting the embedded one costs about 3 s, and nothing here reads it.
    const server = await startSymphony({ env: { DATABASE_URL: 'none' } })
    cleanups.push(() => void server.stop())
    const image = (args: string[], env: Record<string, string> = {}) => {
      const child = spawn(program, [...entry, ...args], {
        cwd: root,
        env: { PATH: process.env.PATH, ...env },
      })
      children.push(child)
      let stdout = ''
      let stderr = ''
      child.stdout?.on('data', (chunk) => (stdout += chunk))
      child.stderr?.on('data', (chunk) => (stderr += chunk))
      const done = new Promise<number | null>((resolve) => child.on('close', resolve))
      return { done, output: () => ({ stdout, stderr }) }
    }
    const run = ['--url', server.url, '--rooms', '2', '--duration', '1', '--ramp', '0', '--quiet']
    const joinToken = 'join-token-of-the-image-test'
    const coordinator = image(
      ['coordinator', '--agents', '1', '--host', '127.0.0.1', '--port', '0', ...run],
      {
        LOADTEST_JOIN_TOKEN: joinToken,
      },
    )
    let url: string | undefined
    await eventually(async () => {
      url = /listening on (ws:\/\/\S+);/.exec(coordinator.output().stderr)?.[1]
      return url !== undefined
    }, 'the coordinator listens')
    // The command and environment `symphony-loadtest ecs` gives each agent task.
    const agent = image(['agent', '--once'], {
      LOADTEST_COORDINATOR_URL: url ?? '',
      LOADTEST_JOIN_TOKEN: joinToken,
    })
    assert.equal(await coordinator.done, 0, coordinator.output().stderr)
    assert.equal(await agent.done, 0, agent.output().stderr)
    assert.match(coordinator.output().stdout, /^WS connect \+ sync +8 +0 /m)
    await server.stop()
  })
})
