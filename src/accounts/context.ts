import type { LimitSettings } from '../limits/policy.js'
import type { Db } from '../db/connect.js'
import type { Clock } from '../lib/clock.js'
import type { Mailer } from '../mail/mailer.js'
import type { MailBrand } from './mails.js'
import type { SealedBox } from '../lib/sealed-box.js'
import type { RevocationBus } from '../revocation/bus.js'

/**
 * What the account use cases (sign-up, verification, password reset, account settings, account
 * deletion) work with; built once in src/services.ts from the services there.
 */
export interface AccountContext {
  readonly db: Db
  readonly bus: RevocationBus
  readonly mailer: Mailer
  readonly clock: Clock
  /** PUBLIC_URL without a trailing slash: every link in a mail starts with it. */
  readonly publicUrl: string
  /** SERVICE_NAME, as mails name the service. */
  readonly serviceName: string
  /** The accent colour and logo URL of mails' HTML part (src/accounts/mails.ts). */
  readonly mailBrand?: MailBrand | undefined
  readonly limits: AccountLimits
  /** What seals TOTP secrets (src/lib/secret-key.ts: SECRET_KEY, or the embedded database's key file). */
  readonly sealedBox: SealedBox
  /** REAUTH_WINDOW_MINUTES: how recent a log-in with a second factor must be to remove the last one. */
  readonly reauthWindowMs: number
}

/** The account limits, as configured (docs/operating/limits.md; each is described in src/limits/policy.ts). */
export type AccountLimits = Omit<LimitSettings, 'clientAuthFailures'>
