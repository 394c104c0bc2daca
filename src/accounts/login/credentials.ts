import { z } from 'zod'
import { PASSWORD_MAX, PASSWORD_MIN } from '../../lib/passwords.js'
import { isCommonPassword } from '../../lib/common-passwords.js'
import { hasControlCharacter } from '../../lib/text.js'

export const EMAIL_MAX = 254

/** Emails are compared and stored lower-cased (users_email_lower). */
export const emailField = z
  .string()
  .refine((v) => !hasControlCharacter(v), { message: 'Email must not contain control characters.', abort: true })
  .trim()
  .toLowerCase()
  .max(EMAIL_MAX, `Email must be at most ${EMAIL_MAX} characters.`)
  .pipe(z.email({ message: 'Enter a valid email address.' }))

export const passwordField = z
  .string()
  .refine((v) => !hasControlCharacter(v), { message: 'Password must not contain control characters.', abort: true })
  .min(PASSWORD_MIN, `Password must be at least ${PASSWORD_MIN} characters.`)
  .max(PASSWORD_MAX, `Password must be at most ${PASSWORD_MAX} characters.`)

/**
 * A password being chosen (sign-up, reset, change): the rules above (NIST SP 800-63B: at least 8,
 * no composition rules) and not one of the most common passwords, checked before any hashing.
 * Log-in does not apply the list: a password chosen before the list existed still logs in.
 */
export const COMMON_PASSWORD_MESSAGE = 'This password is one of the most common passwords, which attackers try first. Choose another.'
export const newPasswordField = passwordField.refine((v) => !isCommonPassword(v), { message: COMMON_PASSWORD_MESSAGE })

export const credentialsSchema = z.object({ email: emailField, password: passwordField })
const signUpSchema = z.object({ email: emailField, password: newPasswordField })

export type FieldErrors = Partial<Record<'email' | 'password', string>>

export type ParsedCredentials =
  | { ok: true; email: string; password: string }
  | {
      ok: false
      errors: FieldErrors
      /** What to show in the email field again; empty when it cannot be shown or used as a key. */
      email: string
      /**
       * A field holds a control character: not something a person typed. The caller answers at
       * once, before the email is used for anything (a rate-limit key is stored text).
       */
      malformed: boolean
    }

/** `newPassword`: the password is being chosen (sign-up), so the common-password list applies. */
export function parseCredentials(body: unknown, options: { newPassword?: boolean } = {}): ParsedCredentials {
  const raw = (body ?? {}) as Record<string, unknown>
  const result = (options.newPassword ? signUpSchema : credentialsSchema).safeParse({
    email: raw.email ?? '',
    password: raw.password ?? '',
  })
  if (result.success) return { ok: true, ...result.data }
  const errors: FieldErrors = {}
  for (const issue of result.error.issues) {
    const field = issue.path[0]
    if ((field === 'email' || field === 'password') && !errors[field]) errors[field] = issue.message
  }
  const text = (v: unknown) => (typeof v === 'string' ? v : '')
  const malformed = hasControlCharacter(text(raw.email)) || hasControlCharacter(text(raw.password))
  const email = hasControlCharacter(text(raw.email)) ? '' : text(raw.email).slice(0, EMAIL_MAX)
  return { ok: false, errors, email, malformed }
}

/** One form field as typed: a string, or empty for anything else (an array from a repeated field). */
export function fieldText(body: unknown, name: string): string {
  const value = ((body ?? {}) as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : ''
}

export type ParsedField = { ok: true; value: string } | { ok: false; error: string }

/** The first message zod gives for `value` under `schema`, or the parsed value. */
export function parseField(schema: z.ZodType<string>, value: unknown): ParsedField {
  const result = schema.safeParse(typeof value === 'string' ? value : '')
  return result.success ? { ok: true, value: result.data } : { ok: false, error: result.error.issues[0]?.message ?? 'Invalid value.' }
}
