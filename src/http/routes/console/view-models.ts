import {
  type Application,
  type ApplicationFormErrors,
  type ApplicationFormValues,
  type TokenPolicyWords,
  describeTokenPolicy,
  tokenPolicyOf,
} from '../../../applications/index.js'
import { type ScopeVocabulary, unicodeHostOf } from '../../../oauth/index.js'

/*
 * Templates get strings and booleans only (so a template cannot leak what it was never given): never a row, never a digest.
 * The one secret a template ever receives is the fresh client secret of the page that shows it once.
 */

/** The page's note when registration stored a redirect URI otherwise than typed (an IDN host in ASCII form). */
export function conversionNotice(conversions: ReadonlyArray<{ typed: string; stored: string }>): string | undefined {
  if (conversions.length === 0) return undefined
  const each = conversions.map((c) => `${c.typed} is stored as ${c.stored}`).join('; ')
  return `${each}: the ASCII (IDNA) form of the host name, which is the name a browser connects to. Clients send this form as redirect_uri.`
}

export function formatTime(d: Date): string {
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`
}

export type ApplicationFormView = {
  title: string
  heading: string
  action: string
  submitLabel: string
  cancelHref: string
  values: Omit<ApplicationFormValues, 'scopes'>
  scopes: Array<{ value: string; description: string; checked: boolean }>
  errors: ApplicationFormErrors
  /** Registration offers the kinds; the edit form shows the kind it keeps. */
  isNew: boolean
  kindLabel: string
  /** A refusal of the whole form (a quota), shown above it. */
  formError?: string
}

export function applicationFormView(
  mode: { kind: 'new' } | { kind: 'edit'; id: string; name: string },
  values: ApplicationFormValues,
  vocabulary: ScopeVocabulary,
  errors: ApplicationFormErrors = {},
): ApplicationFormView {
  const { scopes, ...rest } = values
  const common = {
    isNew: mode.kind === 'new',
    kindLabel: KIND_LABELS[rest.kind as Application['kind']] ?? KIND_LABELS.web,
    values: rest,
    scopes: vocabulary.entries.map((s) => ({ value: s.name, description: s.description, checked: scopes.includes(s.name) })),
    errors,
  }
  return mode.kind === 'new'
    ? {
        title: 'New application',
        heading: 'New application',
        action: '/applications',
        submitLabel: 'Register application',
        cancelHref: '/applications',
        ...common,
      }
    : {
        title: `Edit ${mode.name}`,
        heading: `Edit ${mode.name}`,
        action: `/applications/${mode.id}`,
        submitLabel: 'Save changes',
        cancelHref: `/applications/${mode.id}`,
        ...common,
      }
}

export interface ApplicationView {
  id: string
  /** What the kind means, in the words the registration form uses. */
  kindLabel: string
  /** A native or single-page app: no secret, PKCE S256 (docs/applications.md "Which kind of application?"). */
  isPublic: boolean
  name: string
  description: string
  clientId: string
  /** `unicodeHost`: the host as people read it, when it is stored in ASCII (IDNA) form. */
  redirectUris: Array<{ uri: string; unicodeHost: string | null }>
  postLogoutRedirectUris: Array<{ uri: string; unicodeHost: string | null }>
  scopes: Array<{ value: string; description: string }>
  requirePkce: boolean
  allowImplicit: boolean
  idTokenAlg: string
  requirePushedRequests: boolean
  allowDeviceFlow: boolean
  homepageUrl: string | null
  privacyPolicyUrl: string | null
  /** Set by an operator (docs/operating/admin.md). */
  suspended: boolean
  verified: boolean
  isResourceServer: boolean
  /** DPoP and lifetimes in words (docs/applications.md "Token policy"). */
  tokens: TokenPolicyWords
  created: string
  createdIso: string
  updated: string
  updatedIso: string
}

/** The kinds as the registration form and the application page name them. */
export const KIND_LABELS: Record<Application['kind'], string> = {
  web: 'Web application',
  native: 'Native app',
  spa: 'Single-page app',
  machine: 'Machine',
}

export function applicationView(app: Application, vocabulary: ScopeVocabulary): ApplicationView {
  return {
    id: app.id,
    kindLabel: KIND_LABELS[app.kind],
    isPublic: app.secret_hash === null,
    name: app.name,
    description: app.description,
    clientId: app.client_id,
    redirectUris: app.redirect_uris.map((uri) => ({ uri, unicodeHost: unicodeHostOf(uri) })),
    postLogoutRedirectUris: app.post_logout_redirect_uris.map((uri) => ({ uri, unicodeHost: unicodeHostOf(uri) })),
    scopes: app.allowed_scopes.map((s) => ({ value: s, description: vocabulary.describe(s) })),
    requirePkce: app.require_pkce,
    allowImplicit: app.allow_implicit,
    idTokenAlg: app.id_token_alg,
    requirePushedRequests: app.require_pushed_requests,
    allowDeviceFlow: app.allow_device_flow,
    homepageUrl: app.homepage_url,
    privacyPolicyUrl: app.privacy_policy_url,
    suspended: app.suspended_at !== null,
    verified: app.verified_at !== null,
    isResourceServer: app.is_resource_server,
    tokens: describeTokenPolicy(tokenPolicyOf(app), app.kind),
    created: formatTime(app.created_at),
    createdIso: app.created_at.toISOString(),
    updated: formatTime(app.updated_at),
    updatedIso: app.updated_at.toISOString(),
  }
}
