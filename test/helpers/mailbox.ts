import type { FastifyInstance } from 'fastify'
import type { Mail, Mailer } from '../../src/mail/mailer.js'

/**
 * A mailer for tests that are not about how mail leaves: it keeps every mail in memory, in the
 * order sent (test/integration/account/mail-smtp.test.ts and mail-outbox.test.ts use the real
 * transports). `failing` makes every send fail, as an unreachable SMTP server would.
 */
export class Mailbox implements Mailer {
  readonly mails: Mail[] = []
  failing = false

  async send(mail: Mail): Promise<boolean> {
    if (this.failing) return false
    this.mails.push(mail)
    return true
  }

  close(): void {}

  /** Mails to `to`, oldest first. */
  to(to: string): Mail[] {
    return this.mails.filter((m) => m.to === to)
  }

  /** The newest mail to `to`; throws when there is none. */
  last(to: string): Mail {
    const mail = this.to(to).at(-1)
    if (!mail) throw new Error(`no mail to ${to}; mails so far: ${this.mails.map((m) => `${m.to}: ${m.subject}`).join('; ')}`)
    return mail
  }
}

/** The links of a mail's plain text, in order. */
export function linksIn(mail: Pick<Mail, 'text'>): string[] {
  return [...mail.text.matchAll(/https?:\/\/\S+/g)].map((m) => m[0])
}

/** The first link of the mail to `path` (e.g. '/verify-email'), as a path with query for app.inject. */
export function linkTo(mail: Pick<Mail, 'text'>, path: string): string | undefined {
  for (const link of linksIn(mail)) {
    const url = new URL(link)
    if (url.pathname === path) return `${url.pathname}${url.search}`
  }
  return undefined
}

/** The mailbox of each test app (test/helpers/app.ts), so helpers holding only the app can read its mail. */
export const mailboxes = new WeakMap<FastifyInstance, Mailbox>()
