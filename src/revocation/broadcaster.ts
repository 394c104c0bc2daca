import type { ServerResponse } from 'node:http'
import type { NoticeOrigin, RevocationNotice } from '@gatehouse/verifier/shared'
import type { Db } from '../db/connect.js'
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
 *                     dropped) or cannot be expressed as digests (an application was deleted)
 *   : ping            every 15 s, so a dead connection is noticed
 *
 * Who may subscribe, and what they hear: any registered application, authenticated with its
 * credentials over HTTP Basic, hears every revocation. A resource server must drop every token
 * it may have cached, whoever it was issued to, so filtering by application would defeat the
 * purpose. What it hears is only digests: they identify tokens the subscriber has already seen
 * and reveal nothing else. User and application ids are not sent; "Revoke access" is
 * translated into the digests of that user's tokens for that application, and an application
 * deletion (whose rows are gone) into a reset.
 */

const HEARTBEAT_MS = 15_000
/** Beyond this many digests a "Revoke access" is sent as a reset. */
const MAX_TRANSLATED_DIGESTS = 1000
/** A subscriber this far behind is not reading: cut it off (it reconnects and resets). */
const MAX_BUFFERED_BYTES = 1 << 20
const DIGESTS_PER_EVENT = 100

/** Passes committed revocations to the subscribers of the stream; a receiver on the bus. */
export class RevocationBroadcaster implements RevocationReceiver {
  readonly #subscribers = new Set<ServerResponse>()
  #heartbeat: NodeJS.Timeout | undefined

  constructor(
    private readonly db: Db,
    private readonly log: Pick<BusLog, 'warn'>,
  ) {}

  get subscribers(): number {
    return this.#subscribers.size
  }

  add(res: ServerResponse): void {
    this.#subscribers.add(res)
    res.on('close', () => this.#subscribers.delete(res))
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
        this.reset()
        return
      case 'client-credentials':
        return
    }
  }

  reset(): void {
    this.#send('event: reset\ndata:\n\n')
  }

  closeAll(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat)
    this.#heartbeat = undefined
    for (const res of this.#subscribers) res.end()
    this.#subscribers.clear()
  }

  #sendDigests(digests: readonly string[]): void {
    for (let i = 0; i < digests.length; i += DIGESTS_PER_EVENT) {
      this.#send(`event: revoked\ndata: ${digests.slice(i, i + DIGESTS_PER_EVENT).join(',')}\n\n`)
    }
  }

  #send(chunk: string): void {
    for (const res of this.#subscribers) {
      if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy()
      else res.write(chunk)
    }
  }
}
