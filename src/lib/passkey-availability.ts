import { isIP } from 'node:net'

/*
 * Where passkeys can work (docs/accounts.md "Passkeys"): WebAuthn's relying party id is PUBLIC_URL's host,
 * and it must be a domain (WebAuthn Level 3, 5.1.4.1 and 13.4.9: an RP ID is a valid domain
 * string; browsers refuse an IP address). At an IP address every ceremony would end in the
 * browser's own error, so the pages say why instead and the endpoints refuse.
 */

/** Whether a browser can use passkeys at `publicUrl`: its host is a domain name or localhost, not an IP literal. */
export function passkeysWorkAt(publicUrl: string): boolean {
  return isIP(new URL(publicUrl).hostname.replace(/^\[|\]$/g, '')) === 0
}

/** What the pages and the passkey endpoints say where passkeys cannot work. */
export const PASSKEYS_UNAVAILABLE =
  'Passkeys are not available on this server because it is reached at an IP address; ask the operator to serve it at a domain name.'
