import { dictionary } from '@zxcvbn-ts/language-common'

/*
 * NIST SP 800-63B 5.1.1.2: a new password is compared against a list of commonly used, expected
 * or compromised values, and refused when it is one of them. The list is zxcvbn-ts's
 * "passwords-common" (@zxcvbn-ts/language-common, MIT): about 49,000 passwords ranked by how
 * often they appear in public breach corpora, shipped with the package, so the check runs offline
 * and sends nothing anywhere. Compared without case: "Password1" is as guessable as "password1".
 */
let common: ReadonlySet<string> | undefined

export function isCommonPassword(password: string): boolean {
  common ??= new Set(dictionary['passwords-common'].map((p) => String(p).toLowerCase()))
  return common.has(password.toLowerCase())
}
