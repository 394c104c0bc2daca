/* The console's door (docs/architecture.md "Doors"): the types of "Your Applications" use cases, built in `Services`. */
export type { ConsoleUseCases, Owner } from './use-cases.js'
