import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely'
import type { DatabaseHandle } from '../../src/db/connect.js'

/** Counts every query that reaches the database through a Kysely instance (compiled or built). */
export class QueryCounter implements KyselyPlugin {
  count = 0
  /** Transactions opened through `db.transaction()`. */
  transactions = 0
  /**
   * Runs once each query's result is in, before the app sees it: what another process changes
   * between two of the app's statements. It must not use the counted `db`, nor wait for rows
   * the app's transaction holds (on PGlite, for the one connection).
   */
  afterQuery: ((rows: readonly UnknownRow[]) => Promise<void>) | undefined

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.count++
    await this.afterQuery?.(args.result.rows)
    return args.result
  }
}

/** The same database handle whose queries and transactions are counted. */
export function countQueries(handle: DatabaseHandle): { database: DatabaseHandle; queries: QueryCounter } {
  const queries = new QueryCounter()
  const db = handle.db.withPlugin(queries)
  const transaction = db.transaction.bind(db)
  db.transaction = () => {
    queries.transactions++
    return transaction()
  }
  return { database: { ...handle, db }, queries }
}
