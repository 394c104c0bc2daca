/**
 * Whether a token with `granted` may do what `required` allows: `write` implies every `write_*`
 * scope when a token is checked (docs/decisions/006-scopes.md). Gatehouse's consent and the verifier both
 * apply this rule, so it lives here.
 */
export function scopeSatisfies(granted: readonly string[], required: string): boolean {
  if (granted.includes(required)) return true
  return required.startsWith('write_') && granted.includes('write')
}
