import { REVOCATION_CHANNEL } from '@gatehouse/verifier/shared'
import pg from 'pg'

/*
 * What a DBA does to a database from the outside, through a connection to the server's
 * `postgres` database (so never one of the connections it cuts): terminate backends, stop and
 * allow new connections.
 */

export interface TerminatedBackend {
  pid: number
  state: string | null
  /** Inside a transaction when it was terminated: idle in one, or running a statement of one that began earlier. */
  inTransaction: boolean
  query: string
}

export interface PgAdmin {
  /** pg_terminate_backend of every backend of `database` (or only its LISTEN connections); what each was doing. */
  terminate(database: string, which?: 'all' | 'listen'): Promise<TerminatedBackend[]>
  /** Terminates until no backend of `database` is left (new ones may be opening meanwhile). */
  terminateUntilNone(database: string, timeoutMs?: number): Promise<void>
  /** The pids of `database`'s LISTEN connections on the revocation channel. */
  listenBackends(database: string): Promise<number[]>
  /** ALTER DATABASE … ALLOW_CONNECTIONS: false refuses every new connection, superusers' too. */
  allowConnections(database: string, allow: boolean): Promise<void>
  close(): Promise<void>
}

const LISTENING = `listen %${REVOCATION_CHANNEL}%`

export async function connectPgAdmin(serverUrl: string): Promise<PgAdmin> {
  const url = new URL(serverUrl)
  url.pathname = '/postgres'
  const client = new pg.Client({ connectionString: url.toString() })
  client.on('error', () => {}) // a failure reaches the query that meets it
  await client.connect()
  const q = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) => (await client.query<R>(text, values)).rows
  const terminate: PgAdmin['terminate'] = async (database, which = 'all') => {
    const rows = await q<{ pid: number; state: string | null; in_transaction: boolean | null; query: string }>(
      `select pid, state, left(query, 80) as query,
              state like 'idle in transaction%' or (state = 'active' and xact_start < query_start) as in_transaction,
              pg_terminate_backend(pid)
       from pg_stat_activity
       where datname = $1 and pid <> pg_backend_pid() and ($2 = 'all' or query ilike $3)`,
      [database, which, LISTENING],
    )
    return rows.map((r) => ({ pid: r.pid, state: r.state, inTransaction: r.in_transaction === true, query: r.query }))
  }
  return {
    terminate,
    async terminateUntilNone(database, timeoutMs = 5_000) {
      const deadline = performance.now() + timeoutMs
      for (;;) {
        await terminate(database)
        const [left] = await q<{ n: number }>('select count(*)::int as n from pg_stat_activity where datname = $1', [database])
        const n = left?.n ?? 0
        if (n === 0) return
        if (performance.now() > deadline) throw new Error(`${n} backends of ${database} still there after ${timeoutMs} ms`)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    },
    async listenBackends(database) {
      const rows = await q<{ pid: number }>('select pid from pg_stat_activity where datname = $1 and query ilike $2', [database, LISTENING])
      return rows.map((r) => r.pid)
    },
    async allowConnections(database, allow) {
      await client.query(`alter database ${pg.escapeIdentifier(database)} allow_connections ${allow ? 'true' : 'false'}`)
    },
    close: () => client.end(),
  }
}
