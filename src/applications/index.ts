/*
 * The applications' door (docs/architecture.md "Doors"): what the edges may import of the
 * application lifecycle, which the console and the operator both use: the application form's
 * parsers and values, and the application's row type the pages show.
 */
export type { Application } from '../db/schema.js'
export {
  type ApplicationFormErrors,
  type ApplicationFormValues,
  applicationFormValues,
  newApplicationFormValues,
  parseApplicationForm,
  parseKindChoice,
} from './application-form.js'
export {
  ACCESS_LIFETIMES,
  REFRESH_LIFETIMES,
  type TokenPolicy,
  type TokenPolicyFormValues,
  type TokenPolicyWords,
  describeTokenPolicy,
  formatLifetime,
  parseTokenPolicyChoice,
  tokenPolicyFormValues,
  tokenPolicyOf,
} from './token-policy.js'
export type { TokenPolicyChange } from './token-policy-change.js'
