import { createHash } from 'node:crypto'
import type { PostgresPool, PostgresPoolClient } from 'kysely'
import type pg from 'pg'
import { type DatabaseAvailability, DatabaseUnavailableError } from './availability.js'

/** Statements worth preparing: DML only (DDL in migrations and SET/BEGIN/COMMIT stay plain). */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i

/**
 * Begins a statement that must be planned for its parameters at every execution, so it is sent
 * unnamed (it does not match PREPARABLE). A prepared statement's generic plan is made once per
 * connection: where the best plan depends on how rows are spread (a seq scan while the table is
 * small, an index later), a plan made on a young database would outlive it. Only for statements
 * off the hot paths, which can afford the planning.
 */
export const PLANNED_EACH_TIME = '/* planned each time */'

const names = new Map<string, string>()
function statementName(text: string): string {
  let name = names.get(text)
  if (name === undefined) {
    name = `gh_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`
    if (names.size < 10_000) names.set(text, name)
  }
  return name
}

/**
 * A pg pool for Kysely whose clients send every DML statement as a named prepared statement.
 * Kysely generates the same SQL text for the same query shape, so each connection parses and
 * plans each shape once instead of on every request; on the hot paths (code exchange,
 * revocation, token lookup) parsing and planning were most of PostgreSQL's time per request.
 * The set of shapes is fixed by the code, which bounds the statements held per connection.
 *
 * It is also where the connections tell `availability` what they see: a connection that cannot
 * be had marks the database down (and fails as DatabaseUnavailableError); while it is down, the
 * first query answered marks it up again.
 *
 * `named` false (DATABASE_PREPARED_STATEMENTS=false) sends every statement unnamed: still the
 * extended protocol with its parameters, but parsed and planned on every execution. A named
 * statement belongs to one server connection, and a transaction-pooling PgBouncer (1.18, Debian
 * 12's) hands each transaction whichever connection is free, so the next execution of a name may
 * land where it was never prepared, or where another client prepared it already (docs/operating/pgbouncer.md).
 */
export function preparedStatementPool(pool: pg.Pool, availability: DatabaseAvailability, named = true): PostgresPool {
  const send = sender(availability, named)
  const checkout = checkouts(pool, availability)
  // One wrapper per pg client, made at its first checkout: the pool hands the same clients out
  // again and again, and every statement checks one out (two closures and an object per statement
  // otherwise). A client the pool drops takes its wrapper.
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>()
  const wrap = (client: pg.PoolClient): PostgresPoolClient => ({
    query: ((sqlOrCursor: string | object, parameters?: ReadonlyArray<unknown>) =>
      typeof sqlOrCursor === 'string'
        ? send(client, sqlOrCursor, parameters)
        : client.query(sqlOrCursor as pg.Submittable)) as unknown as PostgresPoolClient['query'],
    release: () => client.release(),
  })
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await checkout()
      let wrapper = wrappers.get(client)
      if (wrapper === undefined) wrappers.set(client, (wrapper = wrap(client)))
      return wrapper
    },
    end: () => pool.end(),
  }
}

/**
 * A client of the pool; a pool that cannot give one marks the database down, unless it was
 * closed here: a statement after `close()` is refused as Kysely's driver refuses one after
 * `destroy()`, not counted as an outage.
 */
function checkouts(pool: pg.Pool, availability: DatabaseAvailability): () => Promise<pg.PoolClient> {
  return async () => {
    try {
      return await pool.connect()
    } catch (err) {
      if (pool.ending) throw err
      availability.lost(err)
      throw new DatabaseUnavailableError('No database connection could be had', { cause: err })
    }
  }
}

/** Sends a statement, DML as a named prepared statement; while the database is down, an answer marks it up. */
function sender(
  availability: DatabaseAvailability,
  named: boolean,
): (client: pg.PoolClient, text: string, values: ReadonlyArray<unknown> | undefined) => Promise<pg.QueryResult> {
  const reachable = () => availability.reachable()
  const ignore = () => {}
  return (client, text, values) => {
    const result =
      named && PREPARABLE.test(text)
        ? client.query({ name: statementName(text), text, values: values as unknown[] })
        : client.query(text, values as unknown[])
    if (!availability.up) result.then(reachable, ignore)
    return result
  }
}
