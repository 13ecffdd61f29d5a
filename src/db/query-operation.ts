import type { CompiledQuery } from 'kysely'

/** What a query does, as a metric label: a handful of values, never the SQL text itself. */
export type QueryOperation = 'select' | 'insert' | 'update' | 'delete' | 'other'

/**
 * `sql` templates are named by their first keyword, a WITH statement by the data-modifying statements inside it
 * (the PostgreSQL create updates a counter and inserts a listing: an insert).
 */
export function queryOperation(query: CompiledQuery): QueryOperation {
  switch (query.query.kind) {
    case 'SelectQueryNode':
      return 'select'
    case 'InsertQueryNode':
      return 'insert'
    case 'UpdateQueryNode':
      return 'update'
    case 'DeleteQueryNode':
      return 'delete'
    case 'RawNode':
      return rawOperation(query.sql)
    default:
      return 'other'
  }
}

const FIRST_KEYWORD = /^\s*(select|insert|update|delete|with)\b/i

function rawOperation(text: string): QueryOperation {
  const keyword = FIRST_KEYWORD.exec(text)?.[1]?.toLowerCase()
  if (keyword !== 'with') return (keyword as QueryOperation | undefined) ?? 'other'
  if (/\binsert\s+into\b/i.test(text)) return 'insert'
  if (/\bupdate\s+\S+\s+set\b/i.test(text)) return 'update'
  if (/\bdelete\s+from\b/i.test(text)) return 'delete'
  return 'select'
}
