export { putSnapshot, storedState } from '../../src/contracts/stored-snapshots.js'
