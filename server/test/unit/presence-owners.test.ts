import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PresenceOwners } from '../../src/core/presence-owners.js'
import { PRESENCE_OUTDATED_MS } from '../../src/core/presence-table.js'
import type { AwarenessEntry } from '../../src/protocol/codec.js'

const state = new TextEncoder().encode('{}')
const present = (clientId: number, clock = 1): AwarenessEntry => ({ clientId, clock, state })
const gone = (clientId: number, clock = 1): AwarenessEntry => ({ clientId, clock, state: null })
const ids = (entries: AwarenessEntry[]): number[] => entries.map((entry) => entry.clientId)

describe('presence owners', () => {
  it('gives an id to the first source that sends a state for it, not to those that echo it', () => {
    const owners = new PresenceOwners<string>()
    assert.deepEqual(ids(owners.saw([present(1)], 'alice', 0)), [1])
    // Bob's provider sends Alice's presence back, with its own: he speaks for his only.
    assert.deepEqual(ids(owners.saw([present(2), present(1)], 'bob', 0)), [2])
    assert.equal(owners.ownerOf(1, 0), 'alice')
    assert.equal(owners.ownerOf(2, 0), 'bob')
    owners.saw([present(3)], 'carol', 0)
    assert.deepEqual(
      ids(owners.saw([present(3, 2)], 'bob', 0)),
      [],
      'nor for another’s, even at a later clock',
    )
    assert.equal(owners.ownerOf(3, 0), 'carol')
  })

  it('returns the entries it was given when their sender owns them all, in their order otherwise', () => {
    const owners = new PresenceOwners<string>()
    const mine = [present(1), present(2)]
    assert.equal(owners.saw(mine, 'alice', 0), mine, 'no copy for a sender speaking for its own')
    owners.saw([present(3)], 'bob', 0)
    // Carol echoes Alice's and Bob's around her own: she owns hers alone, and a removal owns nothing.
    assert.deepEqual(
      ids(owners.saw([present(1), present(4), present(3), present(5), gone(4)], 'carol', 0)),
      [4, 5],
    )
  })

  it('frees an id when its owner removes it or leaves, never when someone else removes it', () => {
    const owners = new PresenceOwners<string>()
    owners.saw([present(1), present(2)], 'alice', 0)
    owners.saw([gone(1, 9)], 'mallory', 0)
    assert.equal(owners.ownerOf(1, 0), 'alice', 'a spoofed removal frees nothing')
    owners.saw([gone(1)], 'alice', 0)
    assert.equal(owners.ownerOf(1, 0), undefined)
    owners.release('alice', [2])
    assert.equal(owners.ownerOf(2, 0), undefined)
    assert.deepEqual(ids(owners.saw([present(2, 5)], 'bob', 0)), [2], 'a freed id goes to the next')
  })

  it('lets an ownership lapse 30 s after its owner last spoke for the id', () => {
    const owners = new PresenceOwners<string>()
    owners.saw([present(1)], 'alice', 0)
    owners.saw([present(1, 2)], 'alice', 20_000) // renewed
    owners.saw([present(1, 3)], 'bob', 40_000) // not the owner: renews nothing
    assert.equal(owners.ownerOf(1, 20_000 + PRESENCE_OUTDATED_MS - 1), 'alice')
    assert.equal(owners.ownerOf(1, 20_000 + PRESENCE_OUTDATED_MS), undefined)
  })

  it('holds no more than the ids spoken for in the last 30 s', () => {
    const owners = new PresenceOwners<string>()
    for (let i = 0; i < 20_000; i++) owners.saw([present(i)], `user-${i}`, i * 10)
    // Purged as it grows: about twice the ids of the last 30 s at most, never all 20,000.
    const recent = PRESENCE_OUTDATED_MS / 10
    assert.ok(owners.tracked <= 2 * recent + 64, `${owners.tracked} ids held`)
  })
})
