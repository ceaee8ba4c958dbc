// @symphony/infra as a library: the `Symphony` construct and what its props are made of.

export type { ServerSettings } from './server-settings.js'
export { TUNABLE_SERVER_SETTINGS } from './server-settings.js'
export type { CpuArchitectureName, JournalSettings, SizeName } from './sizes.js'
export { MEMORYDB_JOURNAL, SIZES } from './sizes.js'
export { Symphony } from './symphony.js'
export type {
  DatabaseSize,
  MemoryDbJournalProps,
  RedisSize,
  ResolvedSizes,
  SymphonyImages,
  SymphonyProps,
  SymphonySubnets,
  SyncSize,
} from './symphony-props.js'
export { SymphonyPropsError } from './symphony-props.js'
