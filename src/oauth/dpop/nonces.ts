import { createHmac, randomBytes } from 'node:crypto'
import type { Db } from '../../db/connect.js'
import type { Clock } from '../../lib/clock.js'
import { constantTimeEqual } from '../../lib/crypto.js'
import { secretNamed } from '../../repositories/server-secrets.js'

/*
 * Server-provided DPoP nonces (RFC 9449 §8), stateless: a nonce is the HMAC of a five-minute time
 * bucket under a key every process shares (server_secrets, like the device cookies' key), so any
 * process accepts what another provided and nothing is stored per client. The current and the
 * previous bucket's nonces are accepted: a nonce lives five to ten minutes (docs/dpop.md "Nonces").
 */

/** How long one nonce is provided for; it is accepted for one bucket more. */
export const NONCE_BUCKET_SECONDS = 300

const KEY_NAME = 'dpop-nonce'

export class DpopNonces {
  private key: Promise<Buffer> | undefined

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /** The nonce to provide now (§8.1 `DPoP-Nonce`). */
  async current(): Promise<string> {
    return mac(await this.keyOf(), bucketOf(this.clock()))
  }

  /** Whether `nonce` is the current or the previous bucket's nonce. */
  async accepts(nonce: string | undefined): Promise<boolean> {
    if (nonce === undefined) return false
    const key = await this.keyOf()
    const bucket = bucketOf(this.clock())
    return constantTimeEqual(nonce, mac(key, bucket)) || constantTimeEqual(nonce, mac(key, bucket - 1))
  }

  /** Read once per process and shared by every process; a failed read is tried again next time. */
  private keyOf(): Promise<Buffer> {
    if (!this.key) {
      const key = secretNamed(this.db, KEY_NAME, randomBytes(32).toString('base64url'), this.clock()).then((s) =>
        Buffer.from(s, 'base64url'),
      )
      key.catch(() => {
        this.key = undefined
      })
      this.key = key
    }
    return this.key
  }
}

function bucketOf(now: Date): number {
  return Math.floor(now.getTime() / 1000 / NONCE_BUCKET_SECONDS)
}

function mac(key: Buffer, bucket: number): string {
  return createHmac('sha256', key).update(`gatehouse dpop nonce v1|${bucket}`).digest('base64url')
}
