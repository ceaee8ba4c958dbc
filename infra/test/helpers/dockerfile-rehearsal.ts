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

/**
 * Plays a multi-stage Dockerfile's COPY, WORKDIR, ENV and RUN steps on this machine, one folder per
 * stage, with the local Node in place of the base image's. No Docker engine is needed, and what the
 * steps copy, install and build is exactly what the image would hold. `root` is the last stage's
 * WORKDIR, where its CMD runs.
 */
export async function rehearseDockerfile(
  contextDir: string,
  dockerfile: string,
): Promise<{ root: string; stages: Stage[]; cleanup: () => void }> {
  const stages = parseDockerfile(join(contextDir, dockerfile))
  const ignored = dockerIgnore(contextDir)
  const workspace = mkdtempSync(join(tmpdir(), 'symphony-image-'))
  const folders = new Map<string, string>()
  let last = workspace
  for (const [index, stage] of stages.entries()) {
    const stageRoot = join(workspace, `stage-${index}`)
    let workdir = stageRoot
    const env: NodeJS.ProcessEnv = { ...process.env }
    const inStage = (path: string) => join(stageRoot, path)
    for (const { keyword, args } of stage.instructions) {
      if (keyword === 'WORKDIR') {
        workdir = inStage(args)
        mkdirSync(workdir, { recursive: true })
      } else if (keyword === 'ENV') {
        const [name = '', value = ''] = args.split('=')
        env[name] = value
      } else if (keyword === 'COPY') {
        const parts = args.split(/\s+/)
        const fromStage = parts[0]?.startsWith('--from=') ? parts.shift()?.slice('--from='.length) : undefined
        const destination = parts.pop() ?? ''
        const target = destination.startsWith('/') ? inStage(destination) : join(workdir, destination)
        for (const source of parts) {
          const origin = fromStage ? join(folders.get(fromStage) ?? '', source) : join(contextDir, source)
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
        await run(args, workdir, env)
      }
    }
    if (stage.name) folders.set(stage.name, stageRoot)
    last = workdir
  }
  return { root: last, stages, cleanup: () => rmSync(workspace, { recursive: true, force: true }) }
}
