import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * A self-signed certificate for 127.0.0.1 and localhost, made with openssl for this run: `path`
 * is what a server process trusts through NODE_EXTRA_CA_CERTS.
 */
export function testCertificate(): { cert: string; key: string; path: string } {
  const folder = mkdtempSync(join(tmpdir(), 'symphony-cert-'))
  const [key, path] = [join(folder, 'key.pem'), join(folder, 'cert.pem')]
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      path,
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
    ].concat(['-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost']),
    { stdio: 'ignore' },
  )
  return { cert: readFileSync(path, 'utf8'), key: readFileSync(key, 'utf8'), path }
}
