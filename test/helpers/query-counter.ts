import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely'
import type { DatabaseHandle } from '../../src/db/connect.js'

/** Counts every query that reaches the database through a Kysely instance (compiled or built). */
export class QueryCounter implements KyselyPlugin {
  count = 0
  /** Transactions opened through `db.transaction()`. */
  transactions = 0

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.count++
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
