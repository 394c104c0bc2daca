/*
 * The accounts domain's door (docs/architecture.md "Doors"): what the edges, src/http/ and
 * src/cli/, may import of src/accounts/. The use cases reach the edges built, through
 * `Services`; this module adds their types, the cookies' lifetimes, the forms' parsers and the
 * second-factor policy the page hook applies.
 */
export type { AccountUseCases, FieldRefusals } from './use-cases.js'
export type { Account } from './account.js'
export type { SessionUser } from './sessions/sessions.js'
export type { ThrottleKind } from './login/login-limits.js'
export type { AssertionFailure } from './second-factor/passkey-login.js'
export type { PasskeyRegistration } from './second-factor/passkeys.js'
/** How long the log-in's device cookie lives (docs/operating/limits.md). */
export { DEVICE_COOKIE_MAX_AGE_SECONDS } from './login/device-cookies.js'
export { MAX_PASSKEYS_PER_USER } from './second-factor/passkeys.js'
/** How long the pending log-in's cookie lives: as long as the pending log-in (docs/accounts.md "Two-factor authentication"). */
export { PENDING_LOGIN_MAX_AGE_SECONDS } from './second-factor/pending-login.js'
/* The forms' parsers: what a submitted field or form becomes before a use case sees it. */
export { emailField, fieldText, newPasswordField, parseCredentials, parseField } from './login/credentials.js'
/** REQUIRE_TWO_FACTOR's decision, which the page hook applies (src/http/second-factor-gate.ts). */
export { type EnrolmentDemand, type PolicyArea, enrolmentDemand, usedSecondFactor } from './second-factor/policy.js'
