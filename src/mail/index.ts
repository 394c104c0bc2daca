/* The mail's door (docs/architecture.md "Doors"): the command line's `gatehouse outbox` and the mail settings it shows. */
export type { MailSettings } from './mailer.js'
export { readOutbox } from './outbox-reader.js'
