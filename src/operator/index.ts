/*
 * The operator's door (docs/architecture.md "Doors"): the types of the operator's use cases
 * (built in `Services`), the failures the admin pages and the command line tell, the size
 * of a search's page, and the dashboard's series (docs/operating/admin.md "The dashboard").
 */
export type { OperatorUseCases } from './use-cases.js'
export type { Activity, ActivityKey, ActivityPeriod } from './activity.js'
export { ACTIVITY_CACHE_MS, ACTIVITY_KEYS } from './activity.js'
export { NotFoundError, RefusedError } from './moderation.js'
/** Rows per page of the operator's user and application searches. */
export { PAGE_SIZE as OPERATOR_PAGE_SIZE } from './moderation.js'
