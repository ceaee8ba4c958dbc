import { spawn } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'

/** One instruction of a Dockerfile, continuation lines joined. */
export interface Instruction {
  keyword: string
  args: string
}

/** A build stage: its `FROM` line's name and its instructions. */
export interface Stage {
  name: string | undefined
  from: string
  instructions: Instruction[]
}

export function parseDockerfile(path: string): Stage[] {
  const lines = readFileSync(path, 'utf8').replace(/\\\n/g, ' ').split('\n')
  const stages: Stage[] = []
  for (const line of lines.map((l) => l.trim())) {
    if (!line || line.startsWith('#')) continue
    const [keyword = '', ...rest] = line.split(/\s+/)
    const args = rest.join(' ')
    if (keyword.toUpperCase() === 'FROM') {
      const [from = '', , name] = rest
      stages.push({ name, from, instructions: [] })
    } else {
      stages.at(-1)?.instructions.push({ keyword: keyword.toUpperCase(), args })
    }
  }
  return stages
}

/** `.dockerignore` patterns as a predicate on paths relative to the context. */
export function dockerIgnore(contextDir: string): (path: string) => boolean {
  const patterns = readFileSync(join(contextDir, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((pattern) => {
      const source = pattern
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*\*\//g, '\u0000')
        .replace(/\*/g, '[^/]*')
        .replaceAll('\u0000', '(?:.*/)?')
      return new RegExp(`^${source}(?:/|$)`)
    })
  // A path is ignored when it, or a folder above it, matches.
  return (path) => patterns.some((pattern) => pattern.test(path))
}

function run(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`RUN ${command} failed (${code}):\n${output.slice(-3000)}`)),
    )
  })
}

/** A played stage: its folder (the image's `/`), its last WORKDIR and its environment. */
interface Played {
  root: string
  workdir: string
  env: NodeJS.ProcessEnv
}

/**
 * Plays a multi-stage Dockerfile's COPY, WORKDIR, ENV and RUN steps on this machine, one folder per
 * stage, with the local Node in place of the base image's. Only the stages the `targets` need are
 * played (their `FROM` parents and `COPY --from` sources), each once; a stage built `FROM` another
 * starts from a copy of that one's folder. No Docker engine is needed, and what the steps copy,
 * install and build is exactly what the images would hold. `roots[target]` is the target's last
 * WORKDIR, where its CMD runs.
 */
export async function rehearseDockerfile<Target extends string>(
  contextDir: string,
  dockerfile: string,
  targets: readonly Target[],
): Promise<{
  roots: Record<Target, string>
  stages: Stage[]
  stage: (name: string) => Stage
  cleanup: () => void
}> {
  const stages = parseDockerfile(join(contextDir, dockerfile))
  const stage = (name: string): Stage => {
    const found = stages.find((s) => s.name === name)
    if (!found) throw new Error(`${dockerfile} has no stage ${name}`)
    return found
  }
  const needed = new Set<Stage>()
  const need = (wanted: Stage): void => {
    if (needed.has(wanted)) return
    needed.add(wanted)
    const parent = stages.find((s) => s.name === wanted.from)
    if (parent) need(parent)
    for (const { keyword, args } of wanted.instructions) {
      const from = /^--from=(\S+)/.exec(args)?.[1]
      if (keyword === 'COPY' && from) need(stage(from))
    }
  }
  for (const target of targets) need(stage(target))

  const ignored = dockerIgnore(contextDir)
  const workspace = mkdtempSync(join(tmpdir(), 'symphony-image-'))
  // Stages play concurrently, each as soon as its parent is done, and a `COPY --from` waits for its
  // source stage, as BuildKit schedules them: the targets' `npm ci` runs alongside the build's.
  const played = new Map<Stage, Promise<Played>>()
  const play = async (index: number, current: Stage): Promise<Played> => {
    const stageRoot = join(workspace, `stage-${index}`)
    const parentStage = stages.find((s) => s.name === current.from)
    const parent = parentStage ? await played.get(parentStage) : undefined
    let workdir = stageRoot
    let env: NodeJS.ProcessEnv = { ...process.env }
    if (parent) {
      cpSync(parent.root, stageRoot, { recursive: true })
      workdir = join(stageRoot, relative(parent.root, parent.workdir))
      env = { ...parent.env }
    } else {
      mkdirSync(stageRoot, { recursive: true })
    }
    const inStage = (path: string) => join(stageRoot, path)
    for (const { keyword, args } of current.instructions) {
      if (keyword === 'WORKDIR') {
        workdir = inStage(args)
        mkdirSync(workdir, { recursive: true })
      } else if (keyword === 'ENV') {
        const equals = args.indexOf('=') // the value may hold '=' itself (NODE_OPTIONS=--flag=16)
        env[args.slice(0, equals)] = args.slice(equals + 1)
      } else if (keyword === 'COPY') {
        const parts = args.split(/\s+/)
        const fromStage = parts[0]?.startsWith('--from=') ? parts.shift()?.slice('--from='.length) : undefined
        const fromRoot = fromStage ? (await played.get(stage(fromStage)))?.root : undefined
        const destination = parts.pop() ?? ''
        const target = destination.startsWith('/') ? inStage(destination) : join(workdir, destination)
        for (const source of parts) {
          const origin = fromStage ? join(fromRoot ?? '', source) : join(contextDir, source)
          if (!existsSync(origin)) throw new Error(`COPY ${source}: not found at ${origin}`)
          if (!fromStage && ignored(relative(contextDir, origin)))
            throw new Error(`COPY ${source}: excluded by .dockerignore`)
          const into = destination.endsWith('/')
            ? join(target, source.split('/').filter(Boolean).at(-1) ?? '')
            : target
          mkdirSync(dirname(into), { recursive: true })
          cpSync(origin, into, {
            recursive: true,
            filter: (path) => fromStage !== undefined || !ignored(relative(contextDir, path)),
          })
        }
      } else if (keyword === 'RUN') {
        // A cache mount (`--mount=type=cache,…`) only keeps npm's cache out of the image: here the
        // machine's own cache plays that part.
        await run(args.replace(/^(?:--mount=\S+\s+)+/, ''), workdir, env)
      }
    }
    return { root: stageRoot, workdir, env }
  }
  for (const [index, current] of stages.entries()) {
    if (needed.has(current)) played.set(current, play(index, current))
  }
  // Settle every stage before failing, so no RUN is still writing into the workspace at cleanup.
  const results = await Promise.allSettled(played.values())
  const failed = results.find((result) => result.status === 'rejected')
  if (failed) {
    rmSync(workspace, { recursive: true, force: true })
    throw failed.reason
  }
  const roots = Object.fromEntries(
    await Promise.all(
      targets.map(async (target) => [target, (await played.get(stage(target)))?.workdir ?? '']),
    ),
  ) as Record<Target, string>
  return { roots, stages, stage, cleanup: () => rmSync(workspace, { recursive: true, force: true }) }
}
