import { describeFailure } from '../db/availability.js'
import type { DatabaseHandle } from '../db/connect.js'
import type { Clock } from '../lib/clock.js'
import { JANITOR_TABLES, type JanitorTable, deleteOlderBatch, tryJanitorLock } from '../repositories/janitor.js'
import { RETENTION } from './policy.js'

/*
 * The janitor (docs/operating/limits.md): every table that grows with traffic loses its
 * dead rows every few minutes, so nothing an anonymous client can do fills the database.
 * Every process runs one; on PostgreSQL an advisory lock lets one of them work at a time.
 */

/** At most this many rows per statement, so no statement holds many row locks for long. */
export const JANITOR_BATCH_SIZE = 1000
export type RowsRemoved = Record<JanitorTable, number>

export interface JanitorRun {
  /** False when another process held the lock: this one did nothing. */
  ran: boolean
  removed: RowsRemoved
}

export interface JanitorLog {
  warn(obj: object, msg: string): void
  info(obj: object, msg: string): void
}

export interface JanitorOptions {
  database: Pick<DatabaseHandle, 'db' | 'kind'>
  clock: Clock
  log: JanitorLog
  intervalMs: number
  revokedTokenRetentionMs: number
  /** Audit events are deleted this long after they happened (AUDIT_RETENTION_DAYS). */
  auditRetentionMs: number
  /** Clients of metadata documents holding no grant are deleted this long after their last fetch (CLIENT_ID_METADATA_UNUSED_DAYS). */
  metadataClientUnusedMs: number
}

const noneRemoved = (): RowsRemoved => Object.fromEntries(JANITOR_TABLES.map((t) => [t, 0])) as RowsRemoved

export class Janitor {
  /** Rows removed by this process since it started, by table (gatehouse_janitor_rows_removed_total). */
  readonly removedTotal: RowsRemoved = noneRemoved()
  /** Runs that failed (a database fault, a timeout); each is retried at the next interval. */
  failedRuns = 0
  #timer: NodeJS.Timeout | undefined
  #running: Promise<unknown> | undefined
  #stopping = false

  constructor(private readonly options: JanitorOptions) {}

  /** The first run comes one interval after start, so a starting fleet does not all run at once. */
  start(): void {
    this.#stopping = false
    this.#schedule()
  }

  /** Stops the schedule and waits for a run under way to finish its current statement. */
  async stop(): Promise<void> {
    this.#stopping = true
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = undefined
    await this.#running?.catch(() => {})
  }

  /**
   * One pass over every table. Throws when the database fails; the schedule logs and retries.
   * On PostgreSQL only the holder of the advisory lock works: the lock is taken in a
   * transaction that stays open, and holds no row lock, while the deletes run outside it, each
   * its own short transaction. PGlite lives in this one process, which needs no lock.
   */
  async runOnce(): Promise<JanitorRun> {
    const run = this.#run()
    this.#running = run
    try {
      return await run
    } finally {
      if (this.#running === run) this.#running = undefined
    }
  }

  async #run(): Promise<JanitorRun> {
    const { db, kind } = this.options.database
    if (kind === 'pglite') return { ran: true, removed: await this.#deleteAll() }
    return db.transaction().execute(async (trx) => {
      if (!(await tryJanitorLock(trx))) return { ran: false, removed: noneRemoved() }
      return { ran: true, removed: await this.#deleteAll() }
    })
  }

  async #deleteAll(): Promise<RowsRemoved> {
    const { db } = this.options.database
    const now = this.options.clock().getTime()
    // In JANITOR_TABLES order, revoked tokens first: deleting a code sets its tokens'
    // authorization_code_id to null, an update the tokens about to go need not get.
    const cutoffs = JANITOR_TABLES.map((table): [JanitorTable, number] => {
      const kept = RETENTION[table]
      return [table, now - (typeof kept === 'number' ? kept : this.options[kept])]
    })
    const removed = noneRemoved()
    for (const [table, cutoff] of cutoffs) {
      for (;;) {
        const n = await deleteOlderBatch(db, table, new Date(cutoff), JANITOR_BATCH_SIZE)
        removed[table] += n
        this.removedTotal[table] += n
        if (n < JANITOR_BATCH_SIZE || this.#stopping) break
      }
      if (this.#stopping) break
    }
    return removed
  }

  #schedule(): void {
    if (this.#stopping) return
    this.#timer = setTimeout(() => void this.#tick(), this.options.intervalMs)
    this.#timer.unref()
  }

  /** A failed run is told in one line and tried again next time (docs/decisions/008-database-faults.md). */
  async #tick(): Promise<void> {
    try {
      const { ran, removed } = await this.runOnce()
      const total = Object.values(removed).reduce((a, b) => a + b, 0)
      if (ran && total > 0) this.options.log.info({ removed }, 'janitor removed expired rows')
    } catch (err) {
      this.failedRuns++
      this.options.log.warn(
        { cause: describeFailure(err) },
        `janitor run failed; retrying in ${Math.round(this.options.intervalMs / 1000)} s`,
      )
    } finally {
      this.#schedule()
    }
  }
}
