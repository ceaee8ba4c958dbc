import assert from 'node:assert/strict'
import { test } from 'node:test'
import { type Comparison, type ContenderResult, FIGURE_NAMES, rssPerAddedUser } from '../src/bench/compare.js'

function contender(name: string, rssKiBPerUser: number | null): ContenderResult {
  const medians = Object.fromEntries(
    FIGURE_NAMES.map((figure) => [figure, null]),
  ) as ContenderResult['medians']
  medians['RSS per user (KiB)'] = rssKiBPerUser
  return {
    name,
    runs: 1,
    medians,
    helperCpuPercent: null,
    helperRssKiBPerUser: null,
    heapKiBPerUser: null,
    roomsHeld: null,
    troubled: 0,
  }
}

test('RSS per added user is the rise in total RSS between the smallest and largest size over the users added', () => {
  // symphony: 500 users × 50 KiB = 25,000 KiB, 1,000 × 35 = 35,000: 10,000 KiB for 500 more users.
  // The cluster: 500 × 166 = 83,000, 1,000 × 90 = 90,000: 7,000 KiB, though its figure per user is far higher.
  const comparisons: Comparison[] = [
    {
      rooms: 125,
      users: 500,
      contenders: [contender('symphony', 50), contender('symphony-cluster-spread', 166)],
    },
    {
      rooms: 250,
      users: 1000,
      contenders: [contender('symphony', 35), contender('symphony-cluster-spread', 90)],
    },
  ]
  assert.deepEqual(rssPerAddedUser(comparisons), [
    'RSS per added user, 500 -> 1000 users (KiB, from the medians):',
    '  symphony: 20.0',
    '  symphony-cluster-spread: 14.0 (0.70 x symphony)',
  ])
})

test('RSS per added user needs two sizes and a figure at both', () => {
  const one: Comparison = { rooms: 125, users: 500, contenders: [contender('symphony', 50)] }
  assert.deepEqual(rssPerAddedUser([one]), [])
  const missing: Comparison = { rooms: 250, users: 1000, contenders: [contender('symphony', null)] }
  assert.deepEqual(rssPerAddedUser([one, missing]), [])
})
