/*
 * Whether the database can be reached, as the connections see it (docs/operating/backups-and-upgrades.md "Failures and
 * recovery"). A request that cannot be served for that reason answers 503 with Retry-After
 * (RFC 9110 15.6.4, 10.2.3) instead of a 500 and a stack trace; the outage is told once when it
 * starts and once when it ends.
 */

/** Seconds a client is asked to wait before retrying a request refused during an outage. */
export const RETRY_AFTER_SECONDS = 2

/** No connection could be had: the database is down, refuses connections, or the pool is exhausted. */
export class DatabaseUnavailableError extends Error {
  override name = 'DatabaseUnavailableError'
}

/** Errors of the socket on the way to the database. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
])

/*
 * SQLSTATEs of a server that is going away or not letting anyone in (PostgreSQL Appendix A):
 * 57P01 admin_shutdown (a restart, pg_terminate_backend), 57P02 crash_shutdown, 57P03
 * cannot_connect_now (starting up, shutting down), 53300 too_many_connections; class 08 is
 * "connection exception".
 */
const GONE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300'])

/** What pg says when the socket under a client closed or the client is already dead. */
const LOST_MESSAGE = /^(Connection terminated|Client has encountered a connection error|Client was closed and is not queryable)/

/** The database, or the way to it, failed: the request may well succeed a moment later. */
export function connectionLost(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof DatabaseUnavailableError) return true
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || GONE_SQLSTATES.has(code) || code.startsWith('08'))) return true
    if (LOST_MESSAGE.test(e.message)) return true
    // Node's dual-stack connect reports every address it tried.
    if (e instanceof AggregateError && e.errors.some(connectionLost)) return true
  }
  return false
}

/**
 * The request failed because the database could not serve it now: a lost connection, or a
 * statement cancelled by DATABASE_STATEMENT_TIMEOUT_MS (57014 query_canceled, an overloaded or
 * locked database). Either way the answer is 503 with Retry-After, not 500.
 */
export function databaseUnavailable(err: unknown): boolean {
  return connectionLost(err) || (err instanceof Error && (err as { code?: unknown }).code === '57014')
}

/**
 * A connection failure in one line, for the log: each message with its code, causes included,
 * never a stack (the stack of a socket error says nothing an operator can use).
 */
export function describeFailure(err: unknown): string {
  const parts: string[] = []
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code
    parts.push(typeof code === 'string' ? `${e.message} (${code})` : e.message)
  }
  return parts.length > 0 ? parts.join(': ') : String(err)
}

export type AvailabilityChange =
  { readonly up: false; readonly cause: Error } | { readonly up: true; readonly downMs: number; readonly refused: number }

/**
 * The database's state as the last connection attempt and the last query saw it. Down when a
 * connection could not be had or was lost; up again at the next connection opened or query
 * answered. Listeners hear each change once.
 */
export class DatabaseAvailability {
  #downSince: number | undefined
  #refusedInOutage = 0
  #refusedTotal = 0
  readonly #listeners = new Set<(change: AvailabilityChange) => void>()

  constructor(private readonly now: () => number = () => performance.now()) {}

  get up(): boolean {
    return this.#downSince === undefined
  }

  /** Requests answered 503 for the database's sake since start-up. */
  get refusedTotal(): number {
    return this.#refusedTotal
  }

  onChange(listener: (change: AvailabilityChange) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** A connection attempt failed, or a connection died under a query. */
  lost(err: unknown): void {
    if (this.#downSince !== undefined) return
    this.#downSince = this.now()
    this.#refusedInOutage = 0
    const cause = err instanceof Error ? err : new Error(String(err))
    for (const l of this.#listeners) l({ up: false, cause })
  }

  /** A connection opened or a query was answered. */
  reachable(): void {
    if (this.#downSince === undefined) return
    const downMs = Math.round(this.now() - this.#downSince)
    this.#downSince = undefined
    for (const l of this.#listeners) l({ up: true, downMs, refused: this.#refusedInOutage })
  }

  /** A request was answered 503 because of `err` (see databaseUnavailable). */
  refused(err: unknown): void {
    this.#refusedTotal++
    if (connectionLost(err)) this.lost(err)
    if (this.#downSince !== undefined) this.#refusedInOutage++
  }
}
