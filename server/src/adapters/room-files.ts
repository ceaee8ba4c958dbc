import { linkSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { legacyFileName, roomFileName } from './room-keys.js'

/**
 * The path of a room's file in `folder`. A file an earlier version named `<room><extension>` is
 * moved to the new name first (linked, then unlinked: never over a file already there), so an
 * upgrade keeps every room's data.
 */
export function roomFilePath(folder: string, room: string, extension: string): string {
  const path = join(folder, `${roomFileName(room)}${extension}`)
  const legacy = legacyFileName(room)
  if (legacy !== null) {
    const legacyPath = join(folder, `${legacy}${extension}`)
    try {
      linkSync(legacyPath, path)
      unlinkSync(legacyPath)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code !== 'ENOENT' && code !== 'EEXIST') throw error
    }
  }
  return path
}
