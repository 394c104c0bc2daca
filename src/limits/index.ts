/*
 * The limits' door (docs/architecture.md "Doors"): the client's address as the audit log keeps
 * it and as the per-address limits count it, and the maintenance use cases' type.
 */
export { clientAddressForAudit, clientAddressKey } from './client-address.js'
export type { MaintenanceUseCases } from './maintenance.js'
