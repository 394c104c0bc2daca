import { z } from 'zod'
import { PASSWORD_MAX, PASSWORD_MIN } from '../lib/passwords.js'

export const EMAIL_MAX = 254

/** Emails are compared and stored lower-cased (users_email_lower). */
export const emailField = z
  .string()
  .trim()
  .toLowerCase()
  .max(EMAIL_MAX, `Email must be at most ${EMAIL_MAX} characters.`)
  .pipe(z.email({ message: 'Enter a valid email address.' }))

export const passwordField = z
  .string()
  .min(PASSWORD_MIN, `Password must be at least ${PASSWORD_MIN} characters.`)
  .max(PASSWORD_MAX, `Password must be at most ${PASSWORD_MAX} characters.`)

export const credentialsSchema = z.object({ email: emailField, password: passwordField })

export type FieldErrors = Partial<Record<'email' | 'password', string>>

export function parseCredentials(
  body: unknown,
): { ok: true; email: string; password: string } | { ok: false; errors: FieldErrors; email: string } {
  const raw = (body ?? {}) as Record<string, unknown>
  const result = credentialsSchema.safeParse({ email: raw.email ?? '', password: raw.password ?? '' })
  if (result.success) return { ok: true, ...result.data }
  const errors: FieldErrors = {}
  for (const issue of result.error.issues) {
    const field = issue.path[0]
    if ((field === 'email' || field === 'password') && !errors[field]) errors[field] = issue.message
  }
  return { ok: false, errors, email: typeof raw.email === 'string' ? raw.email.slice(0, EMAIL_MAX) : '' }
}
