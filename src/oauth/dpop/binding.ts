/**
 * What the token endpoint learned from a request's valid DPoP proof (RFC 9449 §5): the SHA-256
 * thumbprint of the key the tokens it issues are bound to (`cnf.jkt`, §6.1). Undefined when the
 * request carried no proof: the seed's bearer token, unless the application requires DPoP.
 */
export interface DpopBinding {
  readonly jkt: string
}
