import type { Db } from '../db/connect.js'
import type { Clock } from '../lib/clock.js'
import type { Mailer } from '../mail/mailer.js'
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
  readonly limits: AccountLimits
}

/** The account limits, as configured (README "Limits and quotas"). */
export interface AccountLimits {
  /** Failed log-ins per (account, client address), and per device cookie, in 15 minutes. */
  readonly loginFailures: number
  /** Failed log-ins per account in an hour above which only browsers with its device cookie may log in. */
  readonly loginAccountAttack: number
  /** Failed log-ins per client address, whatever the accounts, in 15 minutes (password spraying). */
  readonly loginAddressFailures: number
  /** Sign-up attempts per client address in an hour. */
  readonly signups: number
  /** Verification mails one account may ask for in an hour ("Resend verification email"). */
  readonly verificationEmails: number
  /** Password-reset requests per email address typed, in an hour. */
  readonly passwordResets: number
  /** Password-reset requests per client address, whatever the emails, in an hour. */
  readonly passwordResetAddresses: number
  /** Email-change requests one account may make in an hour (each mails the new address). */
  readonly emailChanges: number
  /** Email-change requests naming one new address, from any accounts, in an hour. */
  readonly emailChangeAddresses: number
}
