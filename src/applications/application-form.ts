import { z } from 'zod'
import type { Application, ApplicationKind } from '../db/schema.js'
import { APPLICATION_KINDS } from '../oauth/clients/kinds.js'
import { hasControlCharacter, hasControlCharacterInText } from '../lib/text.js'
import { validateRegisteredRedirectUri } from '../oauth/clients/redirect-uri-registration.js'
import type { ScopeVocabulary } from '../oauth/grants/scope.js'
import { SIGNING_ALGS } from '../oauth/identity/signing-keys.js'
import type { ApplicationSettings } from '../repositories/applications.js'

/*
 * The new/edit application form: what the person typed, parsed with zod into settings or into
 * messages per field (redirect URIs as docs/decisions/001-redirect-uri-matching.md says).
 */

export const NAME_MAX = 100
export const DESCRIPTION_MAX = 500
export const MAX_REDIRECT_URIS = 20
/** OpenID Connect RP-Initiated Logout 1.0 3: bounded like redirect URIs. */
export const MAX_POST_LOGOUT_REDIRECT_URIS = 20

export const LINK_MAX = 500

export type ApplicationField =
  | 'kind'
  | 'name'
  | 'description'
  | 'homepage_url'
  | 'privacy_policy_url'
  | 'redirect_uris'
  | 'post_logout_redirect_uris'
  | 'scopes'
  | 'id_token_alg'
/** Messages per form field; redirect URIs (and post-logout ones) can have one per bad line. */
export type ApplicationFormErrors = Partial<Record<ApplicationField, string[]>>

/** The form as the person typed it, re-shown unchanged when something is wrong. */
export interface ApplicationFormValues {
  /** web, native, spa or machine (docs/applications.md "Which kind of application?"); chosen at registration. */
  kind: string
  name: string
  description: string
  homepageUrl: string
  privacyPolicyUrl: string
  /** The textarea's raw text: one URI per line. */
  redirectUris: string
  /** The textarea's raw text: one URI per line, possibly none (RP-Initiated Logout 1.0 3). */
  postLogoutRedirectUris: string
  scopes: string[]
  requirePkce: boolean
  allowImplicit: boolean
  /** RS256, ES256 or EdDSA (docs/openid-connect.md). */
  idTokenAlg: string
  requirePushedRequests: boolean
  /** RFC 8628: the device flow (docs/oauth-endpoints.md "Device flow"). */
  allowDeviceFlow: boolean
}

export type ParsedApplicationForm =
  | {
      ok: true
      settings: ApplicationSettings
      values: ApplicationFormValues
      /** Redirect URIs stored otherwise than typed (an internationalised host in ASCII form), for the page to say so. */
      conversions: Array<{ typed: string; stored: string }>
    }
  | { ok: false; errors: ApplicationFormErrors; values: ApplicationFormValues }

const SHOWN_URI_MAX = 80

/**
 * What a new application starts with: every scope allowed; PKCE accepted but not required (the
 * spec's web application flow does not send it); the token flow off until chosen, since
 * RFC 9700 2.1.2 advises against it.
 */
export function newApplicationFormValues(vocabulary: ScopeVocabulary): ApplicationFormValues {
  return {
    kind: 'web',
    name: '',
    description: '',
    homepageUrl: '',
    privacyPolicyUrl: '',
    redirectUris: '',
    postLogoutRedirectUris: '',
    scopes: [...vocabulary.names],
    requirePkce: false,
    allowImplicit: false,
    idTokenAlg: 'RS256',
    requirePushedRequests: false,
    allowDeviceFlow: false,
  }
}

export function applicationFormValues(app: Application): ApplicationFormValues {
  return {
    kind: app.kind,
    name: app.name,
    description: app.description,
    homepageUrl: app.homepage_url ?? '',
    privacyPolicyUrl: app.privacy_policy_url ?? '',
    redirectUris: app.redirect_uris.join('\n'),
    postLogoutRedirectUris: app.post_logout_redirect_uris.join('\n'),
    scopes: app.allowed_scopes,
    requirePkce: app.require_pkce,
    allowImplicit: app.allow_implicit,
    idTokenAlg: app.id_token_alg,
    requirePushedRequests: app.require_pushed_requests,
    allowDeviceFlow: app.allow_device_flow,
  }
}

/** Reads a urlencoded body: a repeated text field is not a value we accept, so it reads as empty. */
function readForm(body: unknown): ApplicationFormValues {
  const raw = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>
  const text = (v: unknown) => (typeof v === 'string' ? v : '')
  const list = (v: unknown) => (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((s): s is string => typeof s === 'string')
  return {
    kind: text(raw.kind) || 'web',
    name: text(raw.name),
    description: text(raw.description),
    homepageUrl: text(raw.homepage_url),
    privacyPolicyUrl: text(raw.privacy_policy_url),
    redirectUris: text(raw.redirect_uris),
    postLogoutRedirectUris: text(raw.post_logout_redirect_uris),
    scopes: list(raw.scopes),
    // An unchecked checkbox is absent from the body; a checked one sends its value ("on").
    requirePkce: raw.require_pkce !== undefined,
    allowImplicit: raw.allow_implicit !== undefined,
    idTokenAlg: text(raw.id_token_alg) || 'RS256',
    requirePushedRequests: raw.require_pushed_requests !== undefined,
    allowDeviceFlow: raw.allow_device_flow !== undefined,
  }
}

function shorten(uri: string): string {
  return uri.length > SHOWN_URI_MAX ? `${uri.slice(0, SHOWN_URI_MAX - 1)}…` : uri
}

/**
 * One URI per line; blank lines and surrounding whitespace are ignored and repeats dropped.
 * Each bad line gets its own message naming the line as the person sees it in the textarea.
 * Post-logout redirect URIs are checked by the same rules as redirect URIs (RP-Initiated Logout
 * 1.0 3 leaves them to the OP; docs/decisions/001-redirect-uri-matching.md), and may be none.
 */
function uriListField(what: { required: boolean; max: number; plural: string }) {
  return z.string().transform((raw, ctx) => {
    const uris: string[] = []
    const conversions: Array<{ typed: string; stored: string }> = []
    raw.split(/\r\n|\r|\n/).forEach((line, index) => {
      const candidate = line.trim()
      if (candidate === '') return
      const check = validateRegisteredRedirectUri(candidate)
      if (!check.ok) {
        ctx.addIssue({ code: 'custom', message: `Line ${index + 1} (${shorten(candidate)}) ${check.reason}.` })
      } else if (!uris.includes(check.uri)) {
        uris.push(check.uri)
        if (check.idn) conversions.push({ typed: candidate, stored: check.uri })
      }
    })
    if (what.required && uris.length === 0 && ctx.issues.length === 0) {
      ctx.addIssue({ code: 'custom', message: 'Enter at least one redirect URI, such as https://example.com/callback.' })
    }
    if (uris.length > what.max) {
      ctx.addIssue({ code: 'custom', message: `Enter at most ${what.max} ${what.plural}.` })
    }
    return { uris, conversions }
  })
}

const redirectUrisField = uriListField({ required: true, max: MAX_REDIRECT_URIS, plural: 'redirect URIs' })
const postLogoutRedirectUrisField = uriListField({
  required: false,
  max: MAX_POST_LOGOUT_REDIRECT_URIS,
  plural: 'post-logout redirect URIs',
})

/**
 * An optional link shown on the consent page, where people decide whether to trust the
 * application: https only (a page on http can be changed on the way), no userinfo (which
 * makes a link read as another host), at most LINK_MAX characters; empty means none.
 */
const linkField = (what: string) =>
  z
    .string()
    .trim()
    .max(LINK_MAX, `${what} must be at most ${LINK_MAX} characters.`)
    .refine((v) => v === '' || isShowableHttpsLink(v), `${what} must be an https:// address, such as https://example.com/.`)
    .transform((v) => (v === '' ? null : new URL(v).href))

function isShowableHttpsLink(v: string): boolean {
  if (hasControlCharacter(v) || /\s/.test(v) || !URL.canParse(v)) return false
  const url = new URL(v)
  return url.protocol === 'https:' && url.hostname !== '' && url.username === '' && url.password === ''
}

const applicationFormSchema = z.object({
  kind: z.enum(APPLICATION_KINDS, { message: 'Choose web application, native app, single-page app or machine.' }),
  name: z
    .string()
    .trim()
    .min(1, 'Enter a name for the application.')
    .max(NAME_MAX, `Name must be at most ${NAME_MAX} characters.`)
    .refine((v) => !hasControlCharacter(v), 'Name must not contain control characters.'),
  description: z
    .string()
    .trim()
    .max(DESCRIPTION_MAX, `Description must be at most ${DESCRIPTION_MAX} characters.`)
    .refine((v) => !hasControlCharacterInText(v), 'Description must not contain control characters (line breaks and tabs are fine).'),
  homepage_url: linkField('Homepage URL'),
  privacy_policy_url: linkField('Privacy policy URL'),
  redirect_uris: redirectUrisField,
  post_logout_redirect_uris: postLogoutRedirectUrisField,
  require_pkce: z.boolean(),
  allow_implicit: z.boolean(),
  id_token_alg: z.enum(SIGNING_ALGS, { message: 'Choose RS256, ES256 or EdDSA.' }),
  require_pushed_requests: z.boolean(),
  allow_device_flow: z.boolean(),
})

/** The scopes field: the names `vocabulary` knows (SCOPES_FILE's or the seed's), at least one, in canonical order. */
const scopesField = (vocabulary: ScopeVocabulary) =>
  z
    .array(z.string().refine((s) => vocabulary.isKnown(s), 'Choose scopes from the list.'))
    .min(1, 'Choose at least one scope.')
    .transform((s) => vocabulary.normalize(s))

/**
 * A single-page app runs at an https origin (or, while it is developed, at a loopback one, as
 * RFC 8252 7.3 allows native apps): its redirect URIs' origins are the ones CORS lets call the
 * token endpoint (docs/decisions/019-public-clients-and-consent.md), and a private-use scheme has
 * no origin a browser would send.
 */
function checkSpaRedirectUris(kind: ApplicationKind, uris: readonly string[], ctx: z.RefinementCtx): void {
  if (kind !== 'spa') return
  for (const uri of uris) {
    if (!/^https?:\/\//i.test(uri)) {
      ctx.addIssue({
        code: 'custom',
        path: ['redirect_uris'],
        message: `${shorten(uri)}: a single-page app's redirect URIs must use https (http only for localhost, 127.0.0.1 and [::1]).`,
      })
    }
  }
}

/**
 * Parses the new/edit form; on failure, messages per field and the input as typed. `fixedKind`:
 * the application's kind when editing, which the edit form does not change.
 */
export function parseApplicationForm(body: unknown, vocabulary: ScopeVocabulary, fixedKind?: ApplicationKind): ParsedApplicationForm {
  const values = readForm(body)
  if (fixedKind !== undefined) values.kind = fixedKind
  const schema = applicationFormSchema
    .extend({ scopes: scopesField(vocabulary) })
    .superRefine((d, ctx) => checkSpaRedirectUris(d.kind, d.redirect_uris.uris, ctx))
  const result = schema.safeParse({
    kind: values.kind,
    name: values.name,
    description: values.description,
    homepage_url: values.homepageUrl,
    privacy_policy_url: values.privacyPolicyUrl,
    redirect_uris: values.redirectUris,
    post_logout_redirect_uris: values.postLogoutRedirectUris,
    scopes: values.scopes,
    require_pkce: values.requirePkce,
    allow_implicit: values.allowImplicit,
    id_token_alg: values.idTokenAlg,
    require_pushed_requests: values.requirePushedRequests,
    allow_device_flow: values.allowDeviceFlow,
  })
  if (result.success) {
    const d = result.data
    return {
      ok: true,
      values,
      conversions: [...d.redirect_uris.conversions, ...d.post_logout_redirect_uris.conversions],
      settings: {
        kind: d.kind,
        name: d.name,
        description: d.description,
        homepageUrl: d.homepage_url,
        privacyPolicyUrl: d.privacy_policy_url,
        redirectUris: d.redirect_uris.uris,
        postLogoutRedirectUris: d.post_logout_redirect_uris.uris,
        allowedScopes: d.scopes,
        requirePkce: d.require_pkce,
        allowImplicit: d.allow_implicit,
        idTokenAlg: d.id_token_alg,
        requirePushedRequests: d.require_pushed_requests,
        allowDeviceFlow: d.allow_device_flow,
      },
    }
  }
  const errors: ApplicationFormErrors = {}
  for (const issue of result.error.issues) {
    const field = issue.path[0] as ApplicationField
    const messages = (errors[field] ??= [])
    // Redirect URIs report every bad line; other fields their first problem.
    if (field === 'redirect_uris' || field === 'post_logout_redirect_uris' || messages.length === 0) {
      if (!messages.includes(issue.message)) messages.push(issue.message)
    }
  }
  return { ok: false, errors, values }
}

/** The "Change kind" form's choice: one of the kinds, or undefined for anything else. */
export function parseKindChoice(body: unknown): ApplicationKind | undefined {
  const kind = body && typeof body === 'object' ? (body as Record<string, unknown>).kind : undefined
  return APPLICATION_KINDS.find((k) => k === kind)
}
