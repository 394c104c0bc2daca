import type { AuditLog } from './audit/audit-log.js'
import { connectionLost } from './db/availability.js'
import type { DatabaseHandle } from './db/connect.js'
import type { Janitor } from './limits/janitor.js'
import type { TokenQuota } from './revocation/token-quota.js'

/**
 * The narrow view of the process's state that the health, metrics and error-handling code of the
 * edge reads (docs/architecture.md "Composition root"), so that none of it reaches into the
 * database handle, the janitor, the audit log or the token quota. Each read is of the moment: a
 * gauge or total copies it at every scrape.
 */
export interface Probes {
  /**
   * /readyz: whether the database answers a query now, asked afresh; a lost connection is told to
   * the database's availability, which logs the outage once (docs/decisions/008-database-faults.md).
   */
  databaseReachable(): Promise<boolean>
  /** The error handlers: a request answered 503 because the database could not serve it (`databaseUnavailable`). */
  refused(error: unknown): void
  /** 1 for gatehouse_database_up while the database answers. */
  readonly databaseUp: boolean
  /** Requests answered 503 for the database's sake since start-up. */
  readonly refusedRequests: number
  /** Rows the janitor of this process deleted, by table (docs/operating/limits.md). */
  readonly janitorRowsRemoved: Readonly<Record<string, number>>
  readonly janitorFailedRuns: number
  /** Audit events this process could not write (docs/operating/admin.md "Audit log"). */
  readonly auditEventsUnrecorded: number
  /** Live tokens revoked to keep MAX_TOKENS_PER_GRANT, and its statements that failed. */
  readonly tokensEvicted: number
  readonly tokenQuotaFailures: number
}

/** The parts the probes read (src/services.ts ServiceParts). */
export interface ProbedParts {
  readonly database: DatabaseHandle
  readonly janitor: Janitor
  readonly audit: AuditLog
  readonly tokenQuota: TokenQuota
}

/**
 * The probes over the parts they read (`Probes`). Getters, so that each read is of the moment; the
 * request path never calls them, only /readyz, a scrape and a refused request.
 */
export function probesOf({ database, janitor, audit, tokenQuota }: ProbedParts): Probes {
  const { availability } = database
  return {
    async databaseReachable() {
      try {
        await database.query('select 1', [])
        return true
      } catch (err) {
        if (connectionLost(err)) availability.lost(err)
        return false
      }
    },
    refused: (error) => availability.refused(error),
    get databaseUp() {
      return availability.up
    },
    get refusedRequests() {
      return availability.refusedTotal
    },
    get janitorRowsRemoved() {
      return janitor.removedTotal
    },
    get janitorFailedRuns() {
      return janitor.failedRuns
    },
    get auditEventsUnrecorded() {
      return audit.unrecorded
    },
    get tokensEvicted() {
      return tokenQuota.evicted
    },
    get tokenQuotaFailures() {
      return tokenQuota.failures
    },
  }
}
