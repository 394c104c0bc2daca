import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely'
import type { DatabaseHandle } from '../../src/db/connect.js'

/** Counts every query that reaches the database through a Kysely instance (compiled or built). */
export class QueryCounter implements KyselyPlugin {
  count = 0

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.count++
    return args.result
  }
}

/** The same database handle whose queries are counted. */
export function countQueries(handle: DatabaseHandle): { database: DatabaseHandle; queries: QueryCounter } {
  const queries = new QueryCounter()
  return { database: { ...handle, db: handle.db.withPlugin(queries) }, queries }
}
