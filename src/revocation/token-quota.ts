import { describeFailure } from '../db/availability.js'
import type { Db } from '../db/connect.js'
import type { Clock } from '../lib/clock.js'
import type { GrantKey } from '../repositories/access-tokens.js'
import type { RevocationBus } from './bus.js'
import { revoke } from './revoke.js'

/**
 * How long a grant that was issued a token waits before its quota is enforced, so that one
 * statement serves every grant issued meanwhile. Short enough that nobody holds an eleventh
 * token for long; long enough that, under load, the statement is shared by many issues.
 */
const FLUSH_DELAY_MS = 50

/** Grants per statement: a bounded array parameter and a bounded number of digests in memory. */
const GRANTS_PER_STATEMENT = 500

export interface TokenQuotaOptions {
  db: Db
  bus: RevocationBus
  clock: Clock
  /** MAX_TOKENS_PER_GRANT: live tokens a (user, application) may hold. */
  tokensPerGrant: number
  log: { warn(obj: object, msg: string): void }
}

/**
 * MAX_TOKENS_PER_GRANT (docs/operating/limits.md): after a token is issued, the grant's live
 * tokens beyond the newest MAX_TOKENS_PER_GRANT are revoked, announced like any revocation.
 *
 * The quota is kept after the response is decided (docs/decisions/007-one-statement-hot-paths.md): the token
 * endpoint's one statement stays as it was, and its plan never depends on how a grant's tokens
 * are spread. Grants issued within FLUSH_DELAY_MS share one statement. A failed statement is
 * logged and dropped: the grant's next issue re-checks all its live tokens, so an excess never
 * outlives it. At most one statement runs at a time per process; two processes that evict from
 * one grant at once revoke each token once (revokeTokensBeyond updates only live rows).
 */
export class TokenQuota {
  /** Tokens this process revoked for the quota since start (gatehouse_tokens_evicted_total). */
  evicted = 0
  /** Enforcement statements that failed since start, each logged (gatehouse_token_quota_failures_total). */
  failures = 0
  readonly #pending = new Map<string, GrantKey>()
  /** The keys of pending grants that started or rotated a refresh-token family. */
  readonly #withFamilies = new Set<string>()
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined

  constructor(private readonly options: TokenQuotaOptions) {}

  /**
   * A token was issued to (user, application): enforce its quota shortly. `family`: with a
   * refresh-token family it started or rotated, whose count the quota then checks too.
   */
  issued(grant: GrantKey, family = false): void {
    const key = `${grant.userId}:${grant.applicationId}`
    this.#pending.set(key, grant)
    if (family) this.#withFamilies.add(key)
    if (this.#running === undefined) this.#schedule(FLUSH_DELAY_MS)
  }

  /** Runs the next statement after `delayMs`, unless one is scheduled already. */
  #schedule(delayMs: number): void {
    if (this.#timer !== undefined) return
    this.#timer = setTimeout(() => void this.#run(), delayMs)
    this.#timer.unref()
  }

  /** Enforces every pending grant now and resolves once nothing is pending (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.#running !== undefined || this.#pending.size > 0) {
      if (this.#running === undefined) {
        clearTimeout(this.#timer)
        this.#timer = undefined
        void this.#run()
      }
      await this.#running
    }
  }

  #run(): Promise<void> {
    this.#timer = undefined
    this.#running = this.#flush().finally(() => {
      this.#running = undefined
      // A full statement's worth waiting goes at once, so the backlog stays bounded under load.
      if (this.#pending.size > 0) this.#schedule(this.#pending.size >= GRANTS_PER_STATEMENT ? 0 : FLUSH_DELAY_MS)
    })
    return this.#running
  }

  async #flush(): Promise<void> {
    const grants: GrantKey[] = []
    const withFamilies: GrantKey[] = []
    for (const [key, grant] of this.#pending) {
      if (grants.length === GRANTS_PER_STATEMENT) break
      grants.push(grant)
      if (this.#withFamilies.delete(key)) withFamilies.push(grant)
      this.#pending.delete(key)
    }
    const { db, bus, clock, tokensPerGrant, log } = this.options
    try {
      this.evicted += await revoke({ db, bus }, { kind: 'beyond-quota', grants, keep: tokensPerGrant, withFamilies }, clock())
    } catch (err) {
      this.failures++
      log.warn(
        { cause: describeFailure(err), grants: grants.length },
        'MAX_TOKENS_PER_GRANT not enforced for these grants until their next token',
      )
    }
  }
}
