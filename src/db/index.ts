/*
 * The database's door for the edges (docs/architecture.md "Doors"): only the outage answers
 * (docs/decisions/008-database-faults.md) and the command line's failure to take a data
 * directory another process holds. Everything else of src/db/ stays behind the use cases.
 */
export { RETRY_AFTER_SECONDS, databaseUnavailable, describeFailure } from './availability.js'
export { DataDirInUseError } from './data-dir-lock.js'
