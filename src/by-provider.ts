/**
 * Providers in one order on every instance: work that spans providers goes one transaction per provider, and two
 * instances doing it at once take the providers in the same order, so neither waits on the other in a circle.
 */
export function byProvider<Row extends { provider_id: string }>(rows: readonly Row[]): Array<[string, Row[]]> {
  const grouped = new Map<string, Row[]>()
  for (const row of rows) {
    const own = grouped.get(row.provider_id)
    if (own) own.push(row)
    else grouped.set(row.provider_id, [row])
  }
  return [...grouped].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}
