import type { NoticeOrigin, RevocationNotice } from '@gatehouse/verifier/shared'
import type { Db } from '../db/connect.js'
import { findRevokedDigests } from '../repositories/token-lookup.js'
import type { BusLog, RevocationReceiver } from './bus.js'

/*
 * What GET /oauth/revocations/stream tells its subscribers, without the transport: the
 * server-sent events themselves are written by src/http/routes/resource/revocation-events.ts.
 * How an introspection-mode verifier in another service hears of revocations within a second
 * instead of waiting out its cache TTL (docs/decisions/003-revocation-propagation.md).
 *
 * Who may subscribe, and what they hear: an application an operator marked as a resource
 * server, authenticated with its credentials, hears every revocation. A resource server must
 * drop every token it may have cached, whoever it was issued to, so filtering by application
 * would defeat the purpose. What it hears is only digests: they identify tokens the subscriber
 * has already seen and reveal nothing else. User and application ids are not sent; "Revoke
 * access" is translated into the digests of that user's tokens for that application; an
 * application deletion arrives as the digests of its tokens (revoke() announces them before
 * the rows go).
 *
 * Bounds (docs/operating/limits.md), per process: STREAMS_PER_APPLICATION streams per
 * application and STREAMS_TOTAL in all, beyond which a subscription is refused before the
 * stream starts; and the streams of an application end when it is deleted or suspended, its
 * secret regenerated or its resource-server flag changed, since their credentials no longer
 * authenticate (the client then gets 401 when it reconnects, or 403 when it is no longer a
 * resource server). Revoking its tokens alone (`gatehouse tokens revoke`) does not end them.
 */

/** Beyond this many digests a "Revoke access" is sent as a reset. */
const MAX_TRANSLATED_DIGESTS = 1000
/** A refused subscription may try again after this long: a slot frees when a stream ends. */
const REFUSED_RETRY_AFTER_SECONDS = 30

/** Who opened a stream: the application whose credentials authenticated it. */
export interface StreamClient {
  applicationId: string
  clientId: string
}

export interface StreamLimits {
  readonly perApplication: number
  readonly total: number
}

/** One open stream, as its transport delivers the feed's events. */
export interface FeedSubscriber {
  readonly client: StreamClient
  /** Tokens with these digests are revoked. */
  revoked(digests: readonly string[]): void
  /** Notices were missed: the subscriber must forget every token it holds. */
  reset(): void
  /** Its credentials no longer authenticate, or the server is closing: the stream ends. */
  end(): void
}

/** Why a subscription is refused before its stream starts; the HTTP layer answers 429 or 503. */
export type StreamRefusal =
  | { readonly reason: 'application-limit'; readonly limit: number; readonly retryAfterSeconds: number }
  | { readonly reason: 'server-limit'; readonly retryAfterSeconds: number }

/** Passes committed revocations to the subscribers of the stream; a receiver on the bus. */
export class RevocationFeed implements RevocationReceiver {
  readonly #subscribers = new Set<FeedSubscriber>()
  readonly #perApplication = new Map<string, number>()
  readonly #limits: StreamLimits

  constructor(
    private readonly db: Db,
    private readonly log: Pick<BusLog, 'warn'>,
    options: { limits?: StreamLimits } = {},
  ) {
    this.#limits = options.limits ?? { perApplication: 4, total: 1000 }
  }

  get subscribers(): number {
    return this.#subscribers.size
  }

  /**
   * Why the client may not open one more stream, if it may not: its application is at its own
   * bound, or this process serves as many streams as it will. Call `add` with no await in
   * between, so that the check and the count cannot interleave.
   */
  refusal(client: StreamClient): StreamRefusal | undefined {
    if ((this.#perApplication.get(client.applicationId) ?? 0) >= this.#limits.perApplication) {
      return { reason: 'application-limit', limit: this.#limits.perApplication, retryAfterSeconds: REFUSED_RETRY_AFTER_SECONDS }
    }
    if (this.#subscribers.size >= this.#limits.total) return { reason: 'server-limit', retryAfterSeconds: REFUSED_RETRY_AFTER_SECONDS }
    return undefined
  }

  /** Counts the subscriber until the returned function is called (when its transport closes). */
  add(subscriber: FeedSubscriber): () => void {
    const { applicationId } = subscriber.client
    this.#subscribers.add(subscriber)
    this.#perApplication.set(applicationId, (this.#perApplication.get(applicationId) ?? 0) + 1)
    return () => {
      if (!this.#subscribers.delete(subscriber)) return
      const left = (this.#perApplication.get(applicationId) ?? 1) - 1
      if (left > 0) this.#perApplication.set(applicationId, left)
      else this.#perApplication.delete(applicationId)
    }
  }

  /** Only committed revocations go out: a local notice may still roll back. */
  apply(notice: RevocationNotice, origin: NoticeOrigin): void {
    if (origin === 'notify') this.publish(notice)
  }

  /** Notices were missed: every subscriber must forget what it holds. */
  clear(): void {
    this.reset()
  }

  /** A committed revocation (from NOTIFY) to pass on. */
  publish(notice: RevocationNotice): void {
    if (this.#subscribers.size === 0) return
    switch (notice.kind) {
      case 'tokens':
        this.#revoked(notice.digests)
        return
      case 'user-application':
        findRevokedDigests(this.db, notice.userId, notice.applicationId, MAX_TRANSLATED_DIGESTS + 1).then(
          (digests) => (digests.length > MAX_TRANSLATED_DIGESTS ? this.reset() : this.#revoked(digests)),
          (err: unknown) => {
            this.log.warn({ err }, 'revocation stream: could not translate a user-application notice; resetting')
            this.reset()
          },
        )
        return
      case 'application-deleted':
      case 'application-suspended':
        // Its tokens' digests came in the notices before this one, from the same transaction.
        this.#endWhere((c) => c.applicationId === notice.applicationId)
        return
      case 'client-credentials':
        this.#endWhere((c) => c.clientId === notice.clientId)
        return
    }
  }

  reset(): void {
    for (const subscriber of this.#subscribers) subscriber.reset()
  }

  /** Ends every stream: the process is closing. */
  closeAll(): void {
    const subscribers = [...this.#subscribers]
    this.#subscribers.clear()
    this.#perApplication.clear()
    for (const subscriber of subscribers) subscriber.end()
  }

  /** Ends the streams opened with credentials that no longer authenticate. */
  #endWhere(match: (client: StreamClient) => boolean): void {
    for (const subscriber of this.#subscribers) if (match(subscriber.client)) subscriber.end()
  }

  #revoked(digests: readonly string[]): void {
    if (digests.length === 0) return
    for (const subscriber of this.#subscribers) subscriber.revoked(digests)
  }
}
