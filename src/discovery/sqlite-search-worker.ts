/** Discovery's search on a SQLite file, on a thread of its own: its candidate queries would hold up the event loop. */
import { parentPort, workerData } from 'node:worker_threads'
import { Kysely, SqliteDialect } from 'kysely'
import { openSqliteConnection } from '../db/sqlite-connection.js'
import { withStatementCache } from '../db/sqlite-statements.js'
import type { Tables } from '../db/tables.js'
import { oneByOne, serveRequests } from '../start-worker.js'
import { sqliteCandidates } from './repository.js'
import { search, type SearchQuery } from './search.js'

if (!parentPort) throw new Error('sqlite-search-worker runs as a worker thread')
const connection = openSqliteConnection((workerData as { path: string }).path)
connection.pragma('query_only = 1')
const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(connection) }) })
const candidates = sqliteCandidates(db)

serveRequests(
  parentPort,
  oneByOne((query: SearchQuery) => search(query, candidates)),
  () => db.destroy(),
)
