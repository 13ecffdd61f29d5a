/**
 * Scenarios measured on several sides in alternating rounds (house.ts, compare.ts): the rounds, their record, and a
 * table comparing two sides.
 */
import { fmt, medianOf } from './lib.js'
import type { LoadResult } from './load.js'

/** Every measurement of a run, by `${scenario} ${side}` (a ceiling's side is `ceiling`). */
export class Rounds {
  private readonly runs = new Map<string, LoadResult[]>()

  add(key: string, result: LoadResult): void {
    this.runs.set(key, [...this.of(key), result])
  }

  of(key: string): LoadResult[] {
    return this.runs.get(key) ?? []
  }

  has(key: string): boolean {
    return this.of(key).length > 0
  }

  median(key: string, pick: (run: LoadResult) => number = (run) => run.rps): number {
    return medianOf(this.of(key).map(pick))
  }

  list(key: string, pick: (run: LoadResult) => string): string {
    return this.of(key).map(pick).join(', ')
  }

  failures(key: string): number {
    return this.of(key).reduce((sum, run) => sum + run.failures, 0)
  }
}

export interface RoundsPlan<Side extends { label: string }> {
  /** For the progress lines: the dialect. */
  name: string
  rounds: number
  scenarios: readonly string[]
  sides: readonly Side[]
  /** One measurement of a scenario on a side, or undefined where the side does not run it. */
  measure(scenario: string, side: Side, round: number): Promise<LoadResult> | undefined
  /** The ceiling a scenario is judged against, measured right before it in every round; undefined: none. */
  ceiling?(scenario: string): Promise<LoadResult> | undefined
}

/**
 * Every scenario on every side, round after round, the order of the sides turning each round (A then B, then B
 * then A) so that a drift of the machine falls on all of them. A ceiling right before its scenario: two minutes
 * apart, one moved by ±20% (discovery.ts).
 */
export async function runRounds<Side extends { label: string }>(plan: RoundsPlan<Side>, record: Rounds): Promise<void> {
  const log = (round: number, scenario: string, label: string, result: LoadResult) =>
    console.error(`${plan.name} round ${round + 1}: ${scenario} ${label} ${fmt(result.rps)} req/s, p99 ${fmt(result.p99Ms, 1)} ms, ${result.failures} failures`)
  for (let round = 0; round < plan.rounds; round++) {
    const order = plan.sides.map((_, i) => plan.sides[(i + round) % plan.sides.length] as Side)
    for (const scenario of plan.scenarios) {
      const ceiling = await plan.ceiling?.(scenario)
      if (ceiling) {
        record.add(`${scenario} ceiling`, ceiling)
        log(round, scenario, 'ceiling', ceiling)
      }
      for (const side of order) {
        const result = await plan.measure(scenario, side, round)
        if (!result) continue
        record.add(`${scenario} ${side.label}`, result)
        log(round, scenario, side.label, result)
      }
    }
  }
}

/** The head of a table comparing two sides row by row (abRow). */
export const abHead = (a: string, b: string): string[] => [
  `| scenario | ${a} req/s, each round | ${b} req/s, each round | ${b} ÷ ${a} (medians) | ${a} p99, each round | ${b} p99, each round | failures ${a} / ${b} |`,
  '|---|---|---|---:|---|---|---:|',
]

/** A scenario's row: each round's req/s and p99 of both sides, the ratio of the medians, the failures. */
export function abRow(record: Rounds, title: string, keyA: string, keyB: string): string {
  const rps = (key: string) => `${record.list(key, (run) => fmt(run.rps))} (median ${fmt(record.median(key))})`
  const p99 = (key: string) => `${record.list(key, (run) => fmt(run.p99Ms, 1))} ms`
  const ratio = record.median(keyB) / record.median(keyA)
  return `| ${title} | ${rps(keyA)} | ${rps(keyB)} | ${fmt(ratio, 3)} | ${p99(keyA)} | ${p99(keyB)} | ${record.failures(keyA)} / ${record.failures(keyB)} |`
}
