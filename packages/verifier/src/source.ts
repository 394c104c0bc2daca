import type { NoticeOrigin, RevocationNotice } from './notices.js'
import type { VerifiedToken } from './types.js'

/** Where a verifier's cache misses go, and how it hears of revocations. */
export interface TokenSource {
  /** The token when valid, undefined when unknown or revoked; throws when it cannot tell. */
  lookup(token: string, digest: string): Promise<VerifiedToken | undefined>
  /** False when no revocation notices will ever arrive (introspection without a stream). */
  readonly notifies: boolean
  close(): Promise<void>
}

/** What a source reports to the verifier's cache. */
export interface NoticeSink {
  apply(notice: RevocationNotice, origin: NoticeOrigin): void
  /** Forget everything (notices may have been missed). */
  reset(): void
  connected(): void
  disconnected(error?: Error): void
}
