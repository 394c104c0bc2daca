import type { LoggerOptions } from 'pino'

/*
 * The options of the process's one logger, built by the composition root (docs/architecture.md
 * "Composition root"); Fastify's request logs are written through it. Here, below every layer,
 * so that building the logger does not reach into the HTTP layer.
 */

/**
 * Parameters whose values never reach a log line, wherever they appear in a URL. Besides the
 * credentials: the OpenID Connect hints, which name a person (login_hint: an email address;
 * id_token_hint: an ID Token with its claims; logout_hint, RP-Initiated Logout 1.0 2), and a
 * pushed request's request_uri, a reference any browser could use while it lives (RFC 9126 7.1),
 * and the device flow's codes (RFC 8628 3.2: the user code in verification_uri_complete, which
 * whoever reads it could approve while it lives; the device code, a bearer secret).
 */
const SECRET_PARAMS = new Set([
  'client_secret',
  'code',
  'code_verifier',
  'token',
  'access_token',
  'password',
  'state',
  '_csrf',
  'id_token_hint',
  'login_hint',
  'logout_hint',
  'request_uri',
  'user_code',
  'device_code',
])

/**
 * A query key as a parser may understand it: `+` is a space and %XX a byte (HTML's
 * application/x-www-form-urlencoded parsing, which Fastify's query parser follows), decoded until
 * nothing changes so that a proxy that decodes once more cannot turn a harmless-looking key into a
 * secret one; compared without case and surrounding spaces. Byte by byte rather than
 * decodeURIComponent, which throws on malformed input: every secret name is ASCII.
 */
function normalisedKey(raw: string): string {
  let key = raw.replace(/\+/g, ' ')
  for (let i = 0; i < 4; i++) {
    const decoded = key.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    if (decoded === key) break
    key = decoded
  }
  return key.trim().toLowerCase()
}

/**
 * The value of `next` (a path to come back to after the log-in) with its own secret parameters
 * redacted: an emailed link's page sends the browser to `/login?next=/confirm-email?token=…`.
 * Left as it is when it holds none; [REDACTED] whole when it cannot be decoded.
 */
function redactNextValue(value: string): string {
  let decoded: string
  try {
    decoded = decodeURIComponent(value.replace(/\+/g, ' '))
  } catch {
    return '[REDACTED]'
  }
  const redacted = redactUrl(decoded)
  return redacted === decoded ? value : encodeURIComponent(redacted)
}

/**
 * The URL with the value of every secret-bearing query parameter replaced by [REDACTED]. Keys are
 * compared decoded (`client%5Fsecret` is `client_secret` to the server) and without case
 * (`Client_Secret` is not a parameter Gatehouse reads, but it is plainly a secret). Pairs are split
 * at `&`, and also at `;` and `#`, which some parsers treat as separators: redacting too much in a
 * log line costs nothing, too little leaks a credential.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?')
  if (q < 0) return url
  const parts = url.slice(q + 1).split(/([&;#])/)
  for (let i = 0; i < parts.length; i += 2) {
    const pair = parts[i]!
    const eq = pair.indexOf('=')
    if (eq < 0) continue
    const key = normalisedKey(pair.slice(0, eq))
    if (SECRET_PARAMS.has(key)) parts[i] = `${pair.slice(0, eq)}=[REDACTED]`
    else if (key === 'next') parts[i] = `${pair.slice(0, eq)}=${redactNextValue(pair.slice(eq + 1))}`
  }
  return `${url.slice(0, q)}?${parts.join('')}`
}

/**
 * JSON request logs with a request id. Bodies are never logged; headers that carry secrets
 * are censored and URLs lose the values of secret-bearing query parameters (the token
 * endpoint accepts its parameters in the query string, as the spec's clients send them).
 */
export function pinoOptions(level: string): LoggerOptions {
  return {
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'res.headers["set-cookie"]',
        '*.client_secret',
        '*.password',
        '*.code',
        '*.token',
        '*.access_token',
      ],
      censor: '[REDACTED]',
    },
    serializers: {
      req(req: { method: string; url: string; ip?: string }) {
        return { method: req.method, url: redactUrl(req.url), remoteAddress: req.ip }
      },
    },
  }
}
