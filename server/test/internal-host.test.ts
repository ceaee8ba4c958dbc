import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { boundAddress, discoverInternalHost } from '../src/transport/internal-host.js'

/** A stand-in for the ECS task metadata endpoint v4, answering `/task` with `task`. */
async function fakeMetadataEndpoint(task: unknown, status = 200) {
  const paths: string[] = []
  const server = createServer((request, response) => {
    paths.push(request.url ?? '')
    response.writeHead(status, { 'Content-Type': 'application/json' })
    response.end(JSON.stringify(task))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const uri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v4/container-id`
  return { uri, paths, close: () => server.close() }
}

describe('internal host discovery', () => {
  it('prefers INTERNAL_HOST when it is set', async () => {
    assert.equal(await discoverInternalHost('10.1.2.3', 'http://127.0.0.1:1/never-asked'), '10.1.2.3')
  })

  it("reads the task's private IPv4 address from the ECS task metadata endpoint", async () => {
    const metadata = await fakeMetadataEndpoint({
      Cluster: 'symphony',
      Containers: [{ Name: 'sync', Networks: [{ NetworkMode: 'awsvpc', IPv4Addresses: ['10.0.3.17'] }] }],
    })
    try {
      assert.equal(await discoverInternalHost(undefined, metadata.uri), '10.0.3.17')
      assert.deepEqual(metadata.paths, ['/v4/container-id/task'])
    } finally {
      metadata.close()
    }
  })

  it('fails clearly when the metadata lists no address or answers an error', async () => {
    const empty = await fakeMetadataEndpoint({ Containers: [{ Networks: [] }] })
    const broken = await fakeMetadataEndpoint({}, 500)
    try {
      await assert.rejects(discoverInternalHost(undefined, empty.uri), /no IPv4 address/)
      await assert.rejects(discoverInternalHost(undefined, broken.uri), /answered 500/)
    } finally {
      empty.close()
      broken.close()
    }
  })

  it('falls back to a local IPv4 address without either', async () => {
    assert.match(await discoverInternalHost(undefined, undefined), /^\d+\.\d+\.\d+\.\d+$/)
  })
})

describe('the address a server bound to its host advertises', () => {
  it('is that host when it names one address, as a URL host (IPv6 in brackets, its zone escaped)', () => {
    assert.equal(boundAddress('127.0.0.1'), '127.0.0.1')
    assert.equal(boundAddress('10.0.0.5'), '10.0.0.5')
    assert.equal(boundAddress('localhost'), 'localhost')
    assert.equal(boundAddress('::1'), '[::1]')
    assert.equal(boundAddress('fe80::1%eth0'), '[fe80::1%25eth0]')
  })

  it('is left to discovery when the host is every interface, however it is spelled', () => {
    for (const host of ['', '0.0.0.0', '::', '::0', '0:0:0:0:0:0:0:0']) {
      assert.equal(boundAddress(host), undefined, host)
    }
  })
})
