import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { Services } from '../../../services.js'
import { databaseUnavailable } from '../../../db/index.js'
import { PASSKEYS_UNAVAILABLE } from '../../../lib/passkey-availability.js'
import { clearCookie, cookieValue, setCookie } from '../../cookies.js'

/*
 * What every passkey ceremony's JSON endpoints share (docs/accounts.md "Passkeys"): adding a passkey and
 * signing in with one (./passkeys.ts), and the log-in's second step (./second-factor.ts).
 */

/**
 * The JSON endpoints answer a refusal made before their handler (invalid JSON, a missing or stale
 * CSRF token, another site's request, a body too large) as JSON the script can show, with fixed
 * words; anything else goes to the pages' error handler.
 */
export const refusalsAsJson = async (error: FastifyError, _request: FastifyRequest, reply: FastifyReply) => {
  const status = error.statusCode ?? 500
  if (status < 400 || status >= 500 || databaseUnavailable(error)) throw error
  const message = error.code?.startsWith('FST_CSRF')
    ? 'This page has expired. Reload it and try again.'
    : error.code === 'GATEHOUSE_CROSS_ORIGIN'
      ? error.message
      : 'The request was not understood. Reload the page and try again.'
  return reply.code(status).header('cache-control', 'no-store').send({ error: message })
}

/**
 * Every passkey ceremony's endpoints (adding one, signing in, the log-in's second step) refuse
 * alike where passkeys cannot work (PUBLIC_URL at an IP address, src/lib/passkey-availability.ts),
 * with words the script shows instead of the browser's own error; before anything else is checked.
 */
export function passkeysOnly(deps: Pick<Services, 'passkeysAvailable'>) {
  return async function passkeysOnly(_request: FastifyRequest, reply: FastifyReply) {
    if (!deps.passkeysAvailable) return json(reply, 409, { error: PASSKEYS_UNAVAILABLE })
  }
}

/** The challenge cookie: the id of the challenge just issued, for its five minutes, sent back with the response. */
export function setChallengeCookie(reply: FastifyReply, deps: Services, challengeId: string): void {
  setCookie(reply, deps, 'webauthn', challengeId)
}

export function takeChallengeCookie(request: FastifyRequest, reply: FastifyReply, deps: Services): string | undefined {
  clearCookie(reply, deps, 'webauthn')
  return cookieValue(request, deps, 'webauthn')
}

export const json = (reply: FastifyReply, status: number, body: Record<string, unknown>) =>
  reply.code(status).header('cache-control', 'no-store').send(body)
