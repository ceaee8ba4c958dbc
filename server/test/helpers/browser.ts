import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type Browser, chromium } from 'playwright-core'

/** Where tests leave screenshots for people to look at (git-ignored). */
export const ARTIFACTS = fileURLToPath(new URL('../../../.test-artifacts/', import.meta.url))

/** Debian's Chromium, headless, as the test script installs it; `args` adds switches. */
export function launchChromium(args: string[] = []): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true })
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', ...args],
  })
}
