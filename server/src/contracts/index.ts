// The ports' acceptance suites (node:test): call one with a factory for your adapter inside a test
// file run by `node --test`, and it registers the tests every adapter of that port must pass.
// Kept out of the package's main entry, so importing the server never loads node:test.
export { metadataSinkContract } from './metadata-sink.contract.js'
export { type RegistryPair, roomRegistryContract } from './room-registry.contract.js'
export { snapshotStoreContract } from './snapshot-store.contract.js'
export { TRICKY_ROOM_NAMES } from './tricky-room-names.js'
export { type JournalFixture, updateJournalContract } from './update-journal.contract.js'
