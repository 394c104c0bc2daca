import type { Services } from '../services.js'

/** The unprefixed names, as sent over plain http (and by tests and the benchmark there). */
export const SESSION_COOKIE = 'gatehouse_session'
export const CSRF_COOKIE = 'gatehouse_csrf'
/** The log-in device cookie (src/accounts/device-cookies.ts). */
export const DEVICE_COOKIE = 'gatehouse_device'
/** The id of a pending WebAuthn challenge (src/http/routes/account/passkeys.ts), for five minutes. */
export const WEBAUTHN_COOKIE = 'gatehouse_webauthn'
/** The log-in waiting for its second factor (src/accounts/pending-login.ts): a random id, five minutes. */
export const PENDING_LOGIN_COOKIE = 'gatehouse_pending_login'

export interface CookieNames {
  readonly session: string
  readonly csrf: string
  readonly device: string
  readonly webauthn: string
  readonly pendingLogin: string
}

/**
 * The names of the session, CSRF, device and pending log-in cookies. When the public URL is https (and cookies are
 * Secure), both carry the `__Host-` prefix (RFC 6265bis 4.1.3.2; OWASP Session Management Cheat
 * Sheet, "Cookies"): a browser stores such a cookie only with Secure, Path=/ and no Domain, so
 * neither a sibling subdomain nor a plain-http response can plant or overwrite it (cookie
 * tossing, which would defeat a double-submit CSRF check). On plain http a browser refuses the
 * prefix, so the names stay as they are.
 */
export function cookieNames(config: Pick<Services['config'], 'publicUrl' | 'cookieSecure'>): CookieNames {
  const prefix = config.cookieSecure && config.publicUrl.startsWith('https:') ? '__Host-' : ''
  return Object.freeze({
    session: `${prefix}${SESSION_COOKIE}`,
    csrf: `${prefix}${CSRF_COOKIE}`,
    device: `${prefix}${DEVICE_COOKIE}`,
    webauthn: `${prefix}${WEBAUTHN_COOKIE}`,
    pendingLogin: `${prefix}${PENDING_LOGIN_COOKIE}`,
  })
}
