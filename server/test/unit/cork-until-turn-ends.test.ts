import assert from 'node:assert/strict'
import { once } from 'node:events'
import { PassThrough } from 'node:stream'
import { describe, it } from 'node:test'
import { corkUntilTurnEnds, flushAtTurnEnd } from '../../src/cork-until-turn-ends.js'

describe('the end of a turn', () => {
  it('sends the journal batches, in order, then uncorks the sockets', async () => {
    const order: string[] = []
    const socket = new PassThrough()
    socket.on('data', () => order.push('socket'))
    corkUntilTurnEnds(socket)
    socket.write('frame')
    flushAtTurnEnd(() => order.push('first batch'))
    flushAtTurnEnd(() => order.push('second batch'))
    await once(socket, 'data')
    assert.deepEqual(order, ['first batch', 'second batch', 'socket'])
  })

  it('a flush that throws leaves the other flushes and the sockets to go out', async () => {
    const flushed: string[] = []
    const socket = new PassThrough()
    corkUntilTurnEnds(socket)
    socket.write('frame')
    const warned = once(process, 'warning')
    flushAtTurnEnd(() => {
      throw new RangeError('Maximum call stack size exceeded')
    })
    flushAtTurnEnd(() => flushed.push('journal'))
    flushAtTurnEnd(() => flushed.push('another'))
    const [data] = await once(socket, 'data')
    assert.equal(String(data), 'frame')
    assert.deepEqual(flushed, ['journal', 'another'])
    const [warning] = await warned
    assert.match(String(warning), /Maximum call stack/)
  })

  it('a stream whose uncork throws leaves the other streams to go out', async () => {
    const broken = {
      cork() {},
      uncork: () => {
        throw new Error('a broken socket')
      },
    }
    const socket = new PassThrough()
    const warned = once(process, 'warning')
    corkUntilTurnEnds(broken)
    corkUntilTurnEnds(socket)
    socket.write('frame')
    const [data] = await once(socket, 'data')
    assert.equal(String(data), 'frame')
    const [warning] = await warned
    assert.match(String(warning), /a broken socket/)
  })
})
