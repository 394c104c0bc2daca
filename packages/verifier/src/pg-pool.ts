import pg from 'pg'

/**
 * A pg pool none of whose clients can end the process. pg's pool listens for `'error'` on idle
 * clients only: a client that is checked out (a transaction, a prepared-statement session) and
 * whose connection dies between two queries (server restart, `pg_terminate_backend`, failover)
 * emits `'error'` with no listener, and Node's EventEmitter throws it as an uncaught exception.
 * Here every client listens from its constructor on; the failure itself still reaches the query
 * that needed the connection, and the pool drops the dead client on release (it is no longer
 * queryable) and opens a new one for the next query.
 */
export function resilientPool(config: pg.PoolConfig, onClientError: (err: Error) => void = () => {}): pg.Pool {
  class ListenedClient extends pg.Client {
    constructor(options?: string | pg.ClientConfig) {
      super(options)
      this.on('error', onClientError)
    }
  }
  const pool = new pg.Pool({ ...config, Client: ListenedClient })
  // The pool re-emits an idle client's error on itself: without a listener that throws too.
  pool.on('error', () => {})
  return pool
}
