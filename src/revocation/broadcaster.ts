import type { ServerResponse } from 'node:http'
import type { NoticeOrigin, RevocationNotice } from '@gatehouse/verifier/shared'
import type { Db } from '../db/connect.js'
import { QUOTAS } from '../limits/policy.js'
import { SlowDownError, TemporarilyUnavailableError } from '../oauth/errors.js'
import { findRevokedDigests } from '../repositories/token-lookup.js'
import type { BusLog, RevocationReceiver } from './bus.js'

/*
 * GET /oauth/revocations/stream: how an introspection-mode verifier in another service hears
 * of revocations within a second instead of waiting out its cache TTL. Server-sent events:
 *
 *   event: ready      the subscription holds; the client forgets its cache (it may have missed
 *                     events while it was not subscribed)
 *   event: revoked    data: comma-separated hex SHA-256 digests of revoked access tokens
 *   event: reset      forget everything: notices were missed (this server's LISTEN connection
 *                     dropped)
 *   : ping            every 15 s, so a dead connection is noticed
 *
 * Who may subscribe, and what they hear: any registered application, authenticated with its
 * credentials over HTTP Basic, hears every revocation. A resource server must drop every token
 * it may have cached, whoever it was issued to, so filtering by application would defeat the
 * purpose. What it hears is only digests: they identify tokens the subscriber has already seen
 * and reveal nothing else. User and application ids are not sent; "Revoke access" is
 * translated into the digests of that user's tokens for that application; an application
 * deletion arrives as the digests of its tokens (revoke() announces them before the rows go).
 *
 * Bounds (README "Limits and quotas"), per process: STREAMS_PER_APPLICATION streams per
 * application and STREAMS_TOTAL in all, beyond which a subscription is refused before the
 * stream starts; a subscriber whose unsent output passes MAX_BUFFERED_BYTES is cut; and the
 * streams of an application end when it is deleted or its secret regenerated, since their
 * credentials no longer authenticate (the client then gets 401 when it reconnects).
 */

const HEARTBEAT_MS = 15_000
/** Beyond this many digests a "Revoke access" is sent as a reset. */
const MAX_TRANSLATED_DIGESTS = 1000
/** A subscriber this far behind is not reading: cut it off (it reconnects and resets). */
const MAX_BUFFERED_BYTES = QUOTAS.streamBufferBytes.max
const DIGESTS_PER_EVENT = 100
/** A refused subscription may try again after this long: a slot frees when a stream ends. */
const REFUSED_RETRY_AFTER_SECONDS = 30

/** Who opened a stream: the application whose credentials authenticated it. */
export interface StreamClient {
  applicationId: string
  clientId: string
}

export interface StreamLimits {
  perApplication: number
  total: number
}

/** Passes committed revocations to the subscribers of the stream; a receiver on the bus. */
export class RevocationBroadcaster implements RevocationReceiver {
  readonly #subscribers = new Map<ServerResponse, StreamClient>()
  readonly #perApplication = new Map<string, number>()
  readonly #limits: StreamLimits
  #heartbeat: NodeJS.Timeout | undefined

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
   * Throws, before the stream starts, when the client may not open one more: 429 for an
   * application at its own bound, 503 when this process serves as many streams as it will.
   * Call `add` with no await in between, so that the check and the count cannot interleave.
   */
  admit(client: StreamClient): void {
    if ((this.#perApplication.get(client.applicationId) ?? 0) >= this.#limits.perApplication) {
      throw new SlowDownError(`At most ${this.#limits.perApplication} revocation streams per application`, REFUSED_RETRY_AFTER_SECONDS)
    }
    if (this.#subscribers.size >= this.#limits.total) {
      throw new TemporarilyUnavailableError('Too many revocation streams on this server', REFUSED_RETRY_AFTER_SECONDS)
    }
  }

  add(res: ServerResponse, client: StreamClient): void {
    this.#subscribers.set(res, client)
    this.#perApplication.set(client.applicationId, (this.#perApplication.get(client.applicationId) ?? 0) + 1)
    res.on('close', () => {
      if (!this.#subscribers.delete(res)) return
      const left = (this.#perApplication.get(client.applicationId) ?? 1) - 1
      if (left > 0) this.#perApplication.set(client.applicationId, left)
      else this.#perApplication.delete(client.applicationId)
    })
    if (!this.#heartbeat) {
      this.#heartbeat = setInterval(() => this.#send(': ping\n\n'), HEARTBEAT_MS)
      this.#heartbeat.unref()
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
        this.#sendDigests(notice.digests)
        return
      case 'user-application':
        findRevokedDigests(this.db, notice.userId, notice.applicationId, MAX_TRANSLATED_DIGESTS + 1).then(
          (digests) => (digests.length > MAX_TRANSLATED_DIGESTS ? this.reset() : this.#sendDigests(digests)),
          (err: unknown) => {
            this.log.warn({ err }, 'revocation stream: could not translate a user-application notice; resetting')
            this.reset()
          },
        )
        return
      case 'application':
        // Its tokens' digests came in the notices before this one, from the same transaction.
        this.#endWhere((c) => c.applicationId === notice.applicationId)
        return
      case 'client-credentials':
        this.#endWhere((c) => c.clientId === notice.clientId)
        return
    }
  }

  reset(): void {
    this.#send('event: reset\ndata:\n\n')
  }

  closeAll(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat)
    this.#heartbeat = undefined
    for (const res of this.#subscribers.keys()) res.end()
    this.#subscribers.clear()
    this.#perApplication.clear()
  }

  /** Ends the streams opened with credentials that no longer authenticate. */
  #endWhere(match: (client: StreamClient) => boolean): void {
    for (const [res, client] of this.#subscribers) if (match(client)) res.end()
  }

  #sendDigests(digests: readonly string[]): void {
    for (let i = 0; i < digests.length; i += DIGESTS_PER_EVENT) {
      this.#send(`event: revoked\ndata: ${digests.slice(i, i + DIGESTS_PER_EVENT).join(',')}\n\n`)
    }
  }

  /**
   * Writes to every subscriber. Once the kernel's socket buffer is full, Node keeps what does
   * not fit in memory (`writableLength`); a subscriber that lets that pass the bound is not
   * reading, so its connection is destroyed: ending it would wait for the same unread bytes.
   */
  #send(chunk: string): void {
    for (const res of this.#subscribers.keys()) {
      if (!res.write(chunk) && res.writableLength > MAX_BUFFERED_BYTES) res.destroy()
    }
  }
}
