import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  MIN_READ_BYTES_PER_SECOND,
  type SendProgress,
  SocketLiveness,
} from '../../src/transport/socket-liveness.js'

const MiB = 1024 * 1024
/** A socket's send side: `written` bytes in all, `buffered` of them not yet taken by the kernel. */
const at = (written: number, buffered = 0, untakenInFlight = buffered): SendProgress => ({
  written,
  completed: written - buffered,
  untakenInFlight,
  buffered,
})

describe('a socket judged alive by progress', () => {
  it('is pinged while it answers, and dead once it answers nothing with nothing queued ahead', () => {
    const liveness = new SocketLiveness(at(0))
    assert.equal(liveness.sweep(at(100), 0), 'ping')
    liveness.pong()
    assert.equal(liveness.sweep(at(200), 1_000), 'ping')
    assert.equal(liveness.sweep(at(200), 2_000), 'dead', 'silent for an interval, nothing to read')
  })

  it('waits while the kernel takes more of a big write, and is dead once it takes nothing for an interval', () => {
    const liveness = new SocketLiveness(at(0))
    assert.equal(liveness.sweep(at(28 * MiB, 20 * MiB), 0), 'ping') // the ping waits behind 20 MiB
    assert.equal(liveness.sweep(at(28 * MiB, 20 * MiB, 15 * MiB), 1_000), 'wait', 'part of the write taken')
    assert.equal(liveness.sweep(at(28 * MiB, 8 * MiB, 8 * MiB), 2_000), 'wait', 'writes completed')
    assert.equal(liveness.sweep(at(28 * MiB, 8 * MiB, 8 * MiB), 3_000), 'dead', 'it stopped reading')
  })

  it('waits, once the kernel holds the rest, as long as reading it at the slowest rate takes, and no longer', () => {
    const liveness = new SocketLiveness(at(0))
    liveness.sweep(at(4 * MiB), 0) // pinged behind 4 MiB the kernel took at once
    const allowedMs = ((4 * MiB) / MIN_READ_BYTES_PER_SECOND) * 1000
    assert.equal(liveness.sweep(at(4 * MiB), allowedMs - 1), 'wait')
    assert.equal(liveness.sweep(at(4 * MiB), allowedMs + 1), 'dead')
  })

  it('counts from the last ping answered: what the peer read before it is not owed again', () => {
    const liveness = new SocketLiveness(at(0))
    liveness.sweep(at(4 * MiB), 0)
    liveness.pong() // it read the 4 MiB
    assert.equal(liveness.sweep(at(4 * MiB + 100), 1_000), 'ping')
    assert.equal(liveness.sweep(at(4 * MiB + 100), 2_001), 'dead', 'only 100 bytes were ahead of that ping')
  })

  it('is alive when it sends anything', () => {
    const liveness = new SocketLiveness(at(0))
    liveness.sweep(at(0), 0)
    liveness.heard()
    assert.equal(liveness.sweep(at(0), 1_000), 'ping')
  })
})
