/** Types for test-requirements.mjs, so TypeScript tests can check what npm test says on each machine. */
export const CONTAINER_COMMAND: string
export interface TestRequirement {
  what: string
  why: string
  debian: string[]
  found: boolean
}
export function testRequirements(probes?: {
  exists?: (path: string) => boolean
  postgresBin?: () => string | null
  python?: () => boolean
}): TestRequirement[]
export interface TestPlan {
  notes?: string[]
  stop?: string[]
  install?: string[]
  missing?: string[]
}
export function testPlan(machine?: {
  platform?: string
  requirements?: TestRequirement[]
  hasAptGet?: boolean
  isRoot?: boolean
  canSudo?: () => boolean
}): TestPlan
export function ensureTestRequirements(): Promise<void>
