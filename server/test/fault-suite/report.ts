import { isClean, type Verdict } from './checker.js'
import type { FaultRunReport } from './fault-run.js'

/** Whether the run found nothing wrong, warm and cold. */
export function passed(report: FaultRunReport): boolean {
  return isClean(report.warm) && isClean(report.cold) && report.warm.agreedAfterMs !== null
}

/** The run as test diagnostics: its faults, what was acknowledged, and what the checks found. */
export function reportLines(report: FaultRunReport, replay: string): string[] {
  const { warm, cold, sessions } = report
  const played = [...report.played]
    .sort((a, b) => a[0] - b[0])
    .map(([ms, what]) => `${(ms / 1000).toFixed(1)} s ${what}`)
  const agreed =
    warm.agreedAfterMs === null ? 'never agreed' : `agreed after ${warm.agreedAfterMs.toFixed(0)} ms`
  return [
    `fault run ${report.profile}, seed ${report.seed} (replay: ${replay}) ${passed(report) ? 'clean' : 'FOUND FAULTS'}`,
    `  faults and deletions as played: ${played.length > 0 ? played.join('; ') : 'none'}`,
    `  sessions: ${sessions.answered} answered, ${sessions.abandoned} abandoned with edits unanswered, ` +
      `${sessions.unstarted} given up before editing; edits acknowledged ${warm.acknowledged}`,
    `  warm (${agreed}): ${counts(warm)}`,
    `  cold: ${counts(cold)}`,
    ...[...warm.examples.map((e) => `warm ${e}`), ...cold.examples.map((e) => `cold ${e}`)].map(
      (e) => `  ${e}`,
    ),
    ...report.problems.map((p) => `  problem: ${p}`),
    `  phases: ${report.phases.map(([name, ms]) => `${name} ${(ms / 1000).toFixed(1)} s`).join(', ')}`,
    `  server errors: ${
      report.serverErrors
        .slice(0, 6)
        .map((e) => `${e.msg} ×${e.count}`)
        .join(', ') || 'none'
    }`,
  ]
}

function counts(verdict: Verdict): string {
  const { mustBePresent, mustBeAbsent, found, lost, diverged, duplicated, resurrected, unknown } = verdict
  return (
    `lost ${lost}, diverged ${diverged}, duplicated ${duplicated}, resurrected ${resurrected}, unknown ${unknown}` +
    ` (must be present ${mustBePresent}, must be absent ${mustBeAbsent}, found ${found})`
  )
}

export const SUMMARY_HEADING =
  'replay | faults | acknowledged | lost | diverged | duplicated | resurrected (warm/cold)'

/** One line per run for the summary of many: its fault mix and its counts, warm/cold. */
export function summaryLine(report: FaultRunReport, replay: string): string {
  const { warm, cold } = report
  const mix = [...new Set(report.schedule.episodes.map((e) => e.kind))].sort().join(' ')
  const both = (key: 'lost' | 'diverged' | 'duplicated' | 'resurrected') => `${warm[key]}/${cold[key]}`
  return [
    replay,
    mix || 'none',
    warm.acknowledged,
    both('lost'),
    both('diverged'),
    both('duplicated'),
    both('resurrected'),
  ].join(' | ')
}
