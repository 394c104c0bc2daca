import {
  type NoticeOrigin,
  REVOCATION_CHANNEL,
  type RevocationNotice,
  type VerifierDatabase,
  decodeNotice,
  encodeNotices,
} from '@gatehouse/verifier/shared'
import { describeFailure } from '../db/availability.js'
import type { DatabaseHandle } from '../db/connect.js'
import { type Clock, systemClock } from '../lib/clock.js'

/** Something that holds what a revocation invalidates: a cache, the revocation stream. */
export interface RevocationReceiver {
  apply(notice: RevocationNotice, origin: NoticeOrigin): void
  /** Notices may have been missed (the LISTEN connection was down): forget everything. */
  clear(): void
}

export interface BusLog {
  warn(obj: object, msg: string): void
  info(obj: object, msg: string): void
}

/**
 * The revocation bus of one database handle (docs/decisions/003-revocation-propagation.md):
 * every receiver in this process hears every revocation, through one LISTEN connection for
 * revocations committed anywhere (`notify`) and at once for those this process makes itself
 * (`local`, see NoticeOrigin). Caches fall back to their TTL bound while LISTEN is down and are
 * cleared when it is back, since notices were missed meanwhile.
 */
export class RevocationBus {
  readonly #receivers = new Set<RevocationReceiver>()
  #stop: (() => Promise<void>) | undefined
  #listening = false

  constructor(
    private readonly database: Pick<DatabaseHandle, 'listen'>,
    private readonly log: BusLog,
    /** Times the outages it reports (src/lib/clock.ts). */
    private readonly clock: Clock = systemClock,
  ) {}

  /** True while revocations from other processes reach this one. */
  get listening(): boolean {
    return this.#listening
  }

  subscribe(receiver: RevocationReceiver): () => void {
    this.#receivers.add(receiver)
    return () => this.#receivers.delete(receiver)
  }

  /** A revocation this process made, told to its receivers before the response leaves. */
  announce(notice: RevocationNotice): void {
    this.#dispatch(notice, 'local')
  }

  /** Resolves once listening. */
  async start(): Promise<void> {
    let lostAt: number | undefined
    this.#stop = await this.database.listen(
      REVOCATION_CHANNEL,
      (payload) => {
        const notice = decodeNotice(payload)
        if (notice) this.#dispatch(notice, 'notify')
      },
      {
        onConnected: () => {
          this.#listening = true
          for (const r of this.#receivers) r.clear()
          if (lostAt !== undefined) this.log.info({ downMs: this.clock().getTime() - lostAt }, 'revocation notifications restored')
          lostAt = undefined
        },
        onDisconnected: (err) => {
          this.#listening = false
          lostAt ??= this.clock().getTime()
          this.log.warn(
            { cause: err === undefined ? 'connection closed' : describeFailure(err) },
            'revocation notifications lost; reconnecting (caches fall back to their TTL meanwhile)',
          )
        },
      },
    )
  }

  async stop(): Promise<void> {
    const stop = this.#stop
    this.#stop = undefined
    this.#receivers.clear()
    await stop?.()
  }

  /**
   * The database option of an in-process @gatehouse/verifier fed by this bus, so it hears this
   * process's own revocations at once like the server's caches do.
   */
  verifierDatabase(database: Pick<VerifierDatabase, 'query'>): VerifierDatabase {
    return {
      query: (text, values) => database.query(text, values),
      listen: async (channel, handler, events) => {
        if (channel !== REVOCATION_CHANNEL) throw new Error(`the revocation bus carries only ${REVOCATION_CHANNEL}`)
        const unsubscribe = this.subscribe({
          apply: (notice, origin) => {
            for (const payload of encodeNotices(notice)) handler(payload, origin)
          },
          clear: () => events?.onConnected?.(),
        })
        if (this.#listening) events?.onConnected?.()
        return async () => {
          unsubscribe()
        }
      },
    }
  }

  #dispatch(notice: RevocationNotice, origin: NoticeOrigin): void {
    for (const r of this.#receivers) r.apply(notice, origin)
  }
}
