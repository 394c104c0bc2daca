import type { ApplicationKind } from '../../db/schema.js'

/*
 * The kinds of application (docs/applications.md "Which kind of application?"). A native or
 * single-page app runs on its users' devices, where nothing it carries stays secret: it is a
 * public client (RFC 6749 2.1), has no secret, and proves its codes with PKCE S256
 * (docs/decisions/019-public-clients-and-consent.md). A web application and a machine keep a
 * secret on a server: confidential clients.
 */

export const APPLICATION_KINDS = ['web', 'native', 'spa', 'machine'] as const satisfies readonly ApplicationKind[]

/** Whether the kind is a public client (RFC 6749 2.1): no secret, client_id alone at the token endpoint. */
export function isPublicKind(kind: ApplicationKind): boolean {
  return kind === 'native' || kind === 'spa'
}
