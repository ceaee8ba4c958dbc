export { type Deferred, deferred } from '../../src/deferred.js'
