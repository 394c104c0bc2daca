import {
  type CompiledQuery,
  type ConnectionProvider,
  DefaultConnectionProvider,
  DefaultQueryExecutor,
  type Dialect,
  Kysely,
  type KyselyPlugin,
  type QueryResult,
} from 'kysely'

/**
 * Runs one statement on a connection of its own, outside any transaction, and gives the
 * connection back: what Kysely does for a statement not in a transaction, in one function.
 */
export type StatementRunner = <R>(compiled: CompiledQuery) => Promise<QueryResult<R>>

/**
 * Kysely's executor, except that a statement outside a transaction goes straight to `run`.
 * Kysely's own path to the pool passes each statement through about ten async functions (the
 * executor, its connection provider, the runtime driver, the dialect's driver and connection,
 * the result's plugins, the release), each a promise and a suspended frame, and three hot paths
 * (exchange, revocation, remembered consent) are one statement each (docs/decisions/007-one-statement-hot-paths.md; the counts
 * before and after are in README "Instructions per request"). Transactions (`withConnectionProvider`)
 * keep Kysely's executor; plugins (the tests' query counter) still see every result, in order.
 */
export class StatementExecutor extends DefaultQueryExecutor {
  readonly #args: ConstructorParameters<typeof DefaultQueryExecutor>
  readonly #run: StatementRunner

  constructor(run: StatementRunner, ...args: ConstructorParameters<typeof DefaultQueryExecutor>) {
    super(...args)
    this.#args = args
    this.#run = run
  }

  override executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const result = this.#run<R>(compiled)
    return this.plugins.length === 0 ? result : result.then((r) => this.#transformResult(r, compiled))
  }

  async #transformResult<R>(result: QueryResult<R>, compiled: CompiledQuery): Promise<QueryResult<R>> {
    let transformed = result as QueryResult<Record<string, unknown>>
    for (const plugin of this.plugins) transformed = await plugin.transformResult({ result: transformed, queryId: compiled.queryId })
    return transformed as QueryResult<R>
  }

  #with(plugins: KyselyPlugin[]): StatementExecutor {
    const [compiler, adapter, connectionProvider] = this.#args
    return new StatementExecutor(this.#run, compiler, adapter, connectionProvider, plugins)
  }

  override withPlugins(plugins: ReadonlyArray<KyselyPlugin>): StatementExecutor {
    return this.#with([...this.plugins, ...plugins])
  }

  override withPlugin(plugin: KyselyPlugin): StatementExecutor {
    return this.#with([...this.plugins, plugin])
  }

  override withPluginAtFront(plugin: KyselyPlugin): StatementExecutor {
    return this.#with([plugin, ...this.plugins])
  }

  override withoutPlugins(): StatementExecutor {
    return this.#with([])
  }

  override withConnectionProvider(connectionProvider: ConnectionProvider): DefaultQueryExecutor {
    const [compiler, adapter] = this.#args
    return new DefaultQueryExecutor(compiler, adapter, connectionProvider, [...this.plugins])
  }
}

/**
 * A Kysely instance over `dialect` whose statements outside transactions go to `run`. Its driver
 * is the dialect's own, initialised here, as Kysely's constructor would on the first statement.
 */
export async function kyselyWithRunner<DB>(dialect: Dialect, run: StatementRunner): Promise<Kysely<DB>> {
  const driver = dialect.createDriver()
  await driver.init()
  const executor = new StatementExecutor(run, dialect.createQueryCompiler(), dialect.createAdapter(), new DefaultConnectionProvider(driver))
  return new Kysely<DB>({ config: { dialect }, driver, executor, dialect })
}
