import { createHash } from 'node:crypto'
import type { PostgresPool, PostgresPoolClient } from 'kysely'
import type pg from 'pg'

/** Statements worth preparing: DML only (DDL in migrations and SET/BEGIN/COMMIT stay plain). */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i

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
 */
export function preparedStatementPool(pool: pg.Pool): PostgresPool {
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect()
      return {
        query: ((sqlOrCursor: string | object, parameters?: ReadonlyArray<unknown>) =>
          typeof sqlOrCursor === 'string' && PREPARABLE.test(sqlOrCursor)
            ? client.query({ name: statementName(sqlOrCursor), text: sqlOrCursor, values: parameters as unknown[] })
            : client.query(sqlOrCursor as string, parameters as unknown[])) as unknown as PostgresPoolClient['query'],
        release: () => client.release(),
      }
    },
    end: () => pool.end(),
  }
}
