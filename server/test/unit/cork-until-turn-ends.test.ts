import assert from 'node:assert/strict'
import { once } from 'node:events'
import { PassThrough } from 'node:stream'
import { describe, it } from 'node:test'
import { corkUntilTurnEnds, flushAtTurnEnd } from '../../src/cork-until-turn-ends.js'

describe('the end of a turn', () => {
  it('sends the journal batch, then the publishes, then uncorks the sockets', async () => {
    const order: string[] = []
    const socket = new PassThrough()
    socket.on('data', () => order.push('socket'))
    corkUntilTurnEnds(socket)
    socket.write('frame')
    flushAtTurnEnd('publish', () => order.push('publish'))
    flushAtTurnEnd('journal', () => order.push('journal'))
    await once(socket, 'data')
    assert.deepEqual(order, ['journal', 'publish', 'socket'])
  })

  it('a flush that throws leaves the other flushes and the sockets to go out', async () => {
    const flushed: string[] = []
    const socket = new PassThrough()
    corkUntilTurnEnds(socket)
    socket.write('frame')
    const warned = once(process, 'warning')
    flushAtTurnEnd('journal', () => {
      throw new RangeError('Maximum call stack size exceeded')
    })
    flushAtTurnEnd('journal', () => flushed.push('journal'))
    flushAtTurnEnd('publish', () => flushed.push('publish'))
    const [data] = await once(socket, 'data')
    assert.equal(String(data), 'frame')
    assert.deepEqual(flushed, ['journal', 'publish'])
    const [warning] = await warned
    assert.match(String(warning), /Maximum call stack/)
  })
})
