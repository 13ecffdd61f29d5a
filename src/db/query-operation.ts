import type { CompiledQuery } from 'kysely'

/** What a query does, as a metric label: a handful of values, never the SQL text itself. */
export type QueryOperation = 'select' | 'insert' | 'update' | 'delete' | 'other'

/**
 * Queries built with Kysely's builder say what they are by their node kind. `sql` templates (the PostgreSQL
 * create, migrations, BEGIN/COMMIT) are raw text: they are named by their first keyword, and a WITH statement
 * by the data-modifying statements inside it (the PostgreSQL create updates a counter and inserts a listing in
 * one statement: it counts as an insert).
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
