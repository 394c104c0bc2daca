import { InvalidRequestError } from '../errors.js'
import type { Params } from '../params.js'

/*
 * What an authorize request asks of the user's log-in (OpenID Connect Core 1.0, 3.1.2.1):
 * prompt, max_age, login_hint, and Gatehouse's own LOGIN_ASKED_PARAM. Read in phase 2 of
 * src/oauth/authorize/authorize-request.ts; each problem is thrown as the error the client is sent.
 */

/**
 * What an authorize request asks of the session: `fresh` (prompt=login or select_account) wants
 * a log-in after the request, `maxAgeSeconds` one at most that old, `hint` prefills the log-in
 * form. `askedAt` is the time Gatehouse sent the browser to log in for this request
 * (LOGIN_ASKED_PARAM): a session authenticated since then satisfies `fresh` and `maxAgeSeconds`,
 * so the request, back from the log-in page, ends instead of asking again.
 */
export interface LogInDemand {
  fresh: boolean
  maxAgeSeconds: number | undefined
  hint: string | undefined
  askedAt: number | undefined
}

/**
 * Gatehouse's own authorize parameter: when it sent the browser to log in for this request
 * (milliseconds since the epoch). Only ever makes a request easier to satisfy by a log-in that
 * happened after it; anyone able to forge it could as well drop prompt and max_age, which is why
 * a relying party checks auth_time (OpenID Connect Core 3.1.2.1, max_age). Read for plain
 * requests only: a pushed request's parameters are the client's, so its time is the push's,
 * kept on the server (src/oauth/authorize/authorize.ts answerPushedRequest).
 */
export const LOGIN_ASKED_PARAM = 'gatehouse_login_asked'

/** The longest login_hint read: an email address (RFC 5321 4.5.3.1.3 path limit). */
const MAX_LOGIN_HINT = 254

const PROMPT_VALUES = new Set(['none', 'login', 'consent', 'select_account'])

/**
 * prompt (OpenID Connect Core 1.0, 3.1.2.1): none stands alone; login asks for a fresh log-in;
 * select_account is answered as login (a browser holds one Gatehouse session, so choosing an
 * account is logging in as it); consent shows the consent page.
 */
export function promptOf(value: string | undefined): { prompt: 'none' | 'consent' | undefined; fresh: boolean } {
  const promptValues = (value ?? '').split(' ').filter(Boolean)
  if (promptValues.some((v) => !PROMPT_VALUES.has(v))) {
    throw new InvalidRequestError('prompt takes none, login, consent or select_account, separated by spaces')
  }
  if (promptValues.includes('none') && promptValues.length > 1) {
    throw new InvalidRequestError('prompt=none cannot be combined with other values')
  }
  const fresh = promptValues.includes('login') || promptValues.includes('select_account')
  return { prompt: promptValues.includes('none') ? 'none' : promptValues.includes('consent') ? 'consent' : undefined, fresh }
}

const NO_LOG_IN_PARAMS = ['max_age', 'login_hint', LOGIN_ASKED_PARAM]
const NO_LOG_IN_DEMAND: LogInDemand = Object.freeze({ fresh: false, maxAgeSeconds: undefined, hint: undefined, askedAt: undefined })

/** A non-negative integer of at most 15 digits (a safe integer), or undefined when it is not one. */
function nonNegativeInteger(value: string | undefined): number | undefined {
  return value !== undefined && /^[0-9]{1,15}$/.test(value) ? Number(value) : undefined
}

/** max_age, login_hint and Gatehouse's own LOGIN_ASKED_PARAM; throws the error the client is sent. */
function logInDemandOf(single: (name: string) => string | undefined, fresh: boolean): LogInDemand {
  const maxAge = single('max_age')
  const maxAgeSeconds = nonNegativeInteger(maxAge)
  if (maxAge !== undefined && maxAgeSeconds === undefined)
    throw new InvalidRequestError('max_age must be a non-negative integer of seconds')
  const hint = single('login_hint')
  if (hint !== undefined && hint.length > MAX_LOGIN_HINT)
    throw new InvalidRequestError(`login_hint must be at most ${MAX_LOGIN_HINT} characters`)
  const asked = single(LOGIN_ASKED_PARAM)
  const askedAt = nonNegativeInteger(asked)
  if (asked !== undefined && askedAt === undefined) throw new InvalidRequestError(`${LOGIN_ASKED_PARAM} is not a time Gatehouse wrote`)
  return { fresh, maxAgeSeconds, hint, askedAt }
}

/** What the request asks of the log-in; a request with none of these parameters builds nothing. */
export function logInDemand(raw: Params, single: (name: string) => string | undefined, fresh: boolean): LogInDemand {
  return fresh || NO_LOG_IN_PARAMS.some((name) => raw[name] !== undefined) ? logInDemandOf(single, fresh) : NO_LOG_IN_DEMAND
}
