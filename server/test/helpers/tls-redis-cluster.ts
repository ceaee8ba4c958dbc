import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, REDIS_SERVER } from '@symphony/dev-scripts/services'
import { Redis } from 'ioredis'
import { eventually } from './clients.js'

/** The node's name in its certificate and in what it announces (CLUSTER SLOTS), as MemoryDB's nodes do. */
const HOST = 'localhost'
const SLOTS = 16384

export interface TlsRedisCluster {
  /** The certificate authority the nodes' certificate is signed by (PEM), for the test to trust. */
  ca: string
  /** The first node: where a client starts, as it starts at MemoryDB's cluster endpoint. */
  port: number
  /** The ACL user that may touch `symphony:*` keys only, and its password. */
  user: string
  password: string
  /** An administrator's connection to each node (the slots are split between them). */
  admins: Redis[]
  stop(): Promise<void>
}

/** Runs openssl in `folder` with space-separated arguments; its chatter stays out of the test output. */
const openssl = (folder: string, args: string) =>
  execFileSync('openssl', args.split(' '), { cwd: folder, stdio: 'pipe' })

/** A certificate authority and a certificate for `HOST` it signed, as files in `folder`. */
function makeCertificates(folder: string): void {
  const key = '-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'
  openssl(folder, `req -x509 ${key} -keyout ca.key -out ca.crt -days 2 -subj /CN=test-ca`)
  openssl(folder, `req ${key} -keyout node.key -out node.csr -subj /CN=${HOST}`)
  writeFileSync(join(folder, 'san.cnf'), `subjectAltName=DNS:${HOST}\n`)
  openssl(
    folder,
    'x509 -req -in node.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out node.crt -days 2 -extfile san.cnf',
  )
}

/**
 * A Redis Cluster of two primaries, each holding half the slots, reachable over TLS only, with the
 * default user off: the shape of a MemoryDB cluster (TLS, ACL users, nodes announced by host name),
 * and a client that does not follow the cluster's redirections fails on half the keys.
 */
export async function startTlsRedisCluster(): Promise<TlsRedisCluster> {
  const folder = mkdtempSync(join(tmpdir(), 'symphony-redis-cluster-'))
  makeCertificates(folder)
  const ca = readFileSync(join(folder, 'ca.crt'), 'utf8')
  const user = 'symphony'
  // Characters a URL treats specially, so a password the cluster client does not decode fails to log in.
  const password = `${randomBytes(8).toString('hex')}%25#?/@:+&=[]`
  const adminPassword = randomBytes(16).toString('hex')
  const nodes: { port: number; busPort: number; child: ChildProcess }[] = []
  const admins: Redis[] = []
  const stop = async () => {
    await Promise.all(admins.map((admin) => admin.quit().catch(() => admin.disconnect())))
    await Promise.all(
      nodes.map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve()
            child.once('exit', () => resolve())
            child.kill('SIGKILL')
          }),
      ),
    )
    rmSync(folder, { recursive: true, force: true })
  }
  try {
    for (const index of [0, 1]) {
      const [port, busPort] = [await freePort(), await freePort()]
      const child = spawn(
        REDIS_SERVER,
        [
          ...['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1'],
          ...['--tls-cert-file', 'node.crt', '--tls-key-file', 'node.key', '--tls-ca-cert-file', 'ca.crt'],
          ...['--tls-auth-clients', 'no', '--tls-cluster', 'yes', '--tls-replication', 'yes'],
          ...['--cluster-enabled', 'yes', '--cluster-port', String(busPort)],
          ...['--cluster-config-file', `nodes-${index}.conf`, '--cluster-announce-hostname', HOST],
          ...['--cluster-preferred-endpoint-type', 'hostname', '--dir', folder],
          ...['--save', '', '--appendonly', 'no', '--loglevel', 'warning'],
          ...['--user', 'default', 'off'],
          ...['--user', 'admin', 'on', `>${adminPassword}`, '~*', '&*', '+@all'],
          // The access string the CDK stack gives MemoryDB's user (infra/lib/journal-store.ts).
          ...['--user', user, 'on', `>${password}`, '~symphony:*', '&*', '+@all'],
        ],
        { cwd: folder, stdio: 'ignore' },
      )
      // Killed with this process too, however the test ends.
      const kill = () => child.kill('SIGKILL')
      process.once('exit', kill)
      child.once('exit', () => process.off('exit', kill))
      nodes.push({ port, busPort, child })
    }
    for (const { port } of nodes) {
      const admin = new Redis({
        host: HOST,
        port,
        username: 'admin',
        password: adminPassword,
        tls: { ca },
        retryStrategy: (times) => (times > 100 ? null : 100),
      })
      admin.on('error', () => {}) // refused until the node listens; the commands below report failures
      admins.push(admin)
    }
    const [first, second] = admins as [Redis, Redis]
    await first.call('CLUSTER', 'ADDSLOTSRANGE', '0', String(SLOTS / 2 - 1))
    await second.call('CLUSTER', 'ADDSLOTSRANGE', String(SLOTS / 2), String(SLOTS - 1))
    await first.call('CLUSTER', 'MEET', '127.0.0.1', String(nodes[1]?.port), String(nodes[1]?.busPort))
    for (const admin of admins) {
      await eventually(
        async () => String(await admin.call('CLUSTER', 'INFO')).includes('cluster_state:ok'),
        'both nodes see every slot served',
        15_000,
      )
    }
    return { ca, port: nodes[0]?.port ?? 0, user, password, admins, stop }
  } catch (error) {
    await stop()
    throw error
  }
}
