/**
 * Providers (or event streams' owners) in one order on every instance: work that spans providers goes one
 * transaction per provider, and two instances doing it at once take the providers in the same order, so neither
 * waits on the other in a circle.
 */
export function byProvider<Key extends string, Row extends Record<Key, string>>(rows: readonly Row[], key: Key): Array<[string, Row[]]> {
  const grouped = new Map<string, Row[]>()
  for (const row of rows) {
    const own = grouped.get(row[key])
    if (own) own.push(row)
    else grouped.set(row[key], [row])
  }
  return [...grouped].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}
