import { pathToFileURL } from 'node:url'
import * as oidc from 'openid-client'

/*
 * A command-line device-flow client (RFC 8628): `npm run example:device`. What a TV app or a CLI
 * tool does: ask Gatehouse for a code, show it with the page to type it at, poll until the user
 * has answered, then call the example resource API (examples/resource-api.ts, GET /me) with the
 * token. openid-client does every protocol step; nothing here speaks OAuth by hand.
 *
 *   GATEHOUSE_ISSUER=http://127.0.0.1:3000 CLIENT_ID=… CLIENT_SECRET=… npm run example:device
 *
 * The application needs "Allow the device flow" ticked in the console. CLIENT_SECRET may be
 * left out for a public (native) application, which then authenticates by client_id alone.
 */

export interface DeviceClientOptions {
  /** Gatehouse's PUBLIC_URL; its discovery document configures the rest. */
  issuer: string
  clientId: string
  /** Absent for a public client. */
  clientSecret?: string
  scope: string
  /** The example resource API's base URL. */
  apiUrl: string
  /** Where the code and the link are shown to the user. */
  show: (message: string, started: oidc.DeviceAuthorizationResponse) => void | Promise<void>
}

/** Runs the device flow and calls GET /me with the token; answers what the API said. */
export async function runDeviceClient(options: DeviceClientOptions): Promise<unknown> {
  const auth = options.clientSecret === undefined ? oidc.None() : oidc.ClientSecretPost(options.clientSecret)
  const config = await oidc.discovery(new URL(options.issuer), options.clientId, undefined, auth, {
    // Only for http://127.0.0.1 in development; a real Gatehouse is served over https.
    execute: new URL(options.issuer).protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
  })
  const started = await oidc.initiateDeviceAuthorization(config, { scope: options.scope })
  await options.show(
    [
      `To sign in, open ${started.verification_uri} on your phone or computer and type the code ${started.user_code}`,
      `(or open ${started.verification_uri_complete ?? started.verification_uri}).`,
      `The code works for ${Math.round(started.expires_in / 60)} minutes. Waiting...`,
    ].join('\n'),
    started,
  )
  // Waits `interval` seconds between polls, and 5 s more at each slow_down (RFC 8628 3.5).
  const tokens = await oidc.pollDeviceAuthorizationGrant(config, started)
  const res = await fetch(`${options.apiUrl.replace(/\/+$/, '')}/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
  if (!res.ok) throw new Error(`The resource API answered ${res.status}: ${await res.text()}`)
  return res.json()
}

async function main(env: Record<string, string | undefined>): Promise<void> {
  if (!env.CLIENT_ID) {
    console.error('Set CLIENT_ID (and CLIENT_SECRET for a confidential application) of an application with the device flow allowed.')
    process.exit(1)
  }
  try {
    const me = await runDeviceClient({
      issuer: env.GATEHOUSE_ISSUER ?? 'http://127.0.0.1:3000',
      clientId: env.CLIENT_ID,
      clientSecret: env.CLIENT_SECRET,
      scope: env.SCOPE ?? 'read',
      apiUrl: env.API_URL ?? 'http://127.0.0.1:4000',
      show: (message) => console.log(message),
    })
    console.log(`Signed in. GET /me answered: ${JSON.stringify(me)}`)
  } catch (err) {
    // openid-client's ResponseBodyError carries the OAuth error: access_denied, expired_token.
    const code = err instanceof oidc.ResponseBodyError ? ` (${err.error})` : ''
    console.error(`Device sign-in failed${code}: ${(err as Error).message}`)
    process.exit(1)
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main(process.env)
