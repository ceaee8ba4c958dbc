export { TRICKY_ROOM_NAMES } from '../../src/contracts/tricky-room-names.js'
