import { randomBytes } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import nodemailer, { type Transporter } from 'nodemailer'

/*
 * How mail leaves Gatehouse (docs/accounts.md "Mail"): through SMTP when SMTP_URL is set, else as .eml
 * files in MAIL_OUTBOX_DIR, for local use. Built once, in src/services.ts; the account use cases
 * receive it. A mail carries live links (verification, password reset), so neither its body nor
 * its links are ever logged: a line names the recipient's mail only by subject and, in outbox
 * mode, by file name.
 */

export interface MailSettings {
  /** smtp:// or smtps:// with optional user:password; undefined: mails are written to `outboxDir`. */
  readonly smtpUrl: string | undefined
  /** The From header of every mail. */
  readonly from: string
  /** Where mails go as .eml files when there is no SMTP_URL. */
  readonly outboxDir: string
}

/** One message, written twice: plain text and simple HTML. */
export interface Mail {
  readonly to: string
  readonly subject: string
  readonly text: string
  readonly html: string
}

export interface Mailer {
  /**
   * Sends the mail; false when it could not be sent (already logged, without the mail's
   * content). Never throws: a mail that cannot leave must not lose the action that caused it.
   */
  send(mail: Mail): Promise<boolean>
  close(): void
}

export interface MailLog {
  info(obj: object, msg: string): void
  error(obj: object, msg: string): void
}

/** Seconds nodemailer may wait on an SMTP server; its defaults (up to 10 minutes) would hold a page that long. */
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 }

/** The mailer the settings ask for: SMTP, or the outbox directory. */
export function createMailer(settings: MailSettings, log: MailLog): Mailer {
  return settings.smtpUrl === undefined ? new OutboxMailer(settings, log) : new SmtpMailer(settings, settings.smtpUrl, log)
}

/** Why a send failed, without anything of the message: nodemailer's errors may quote the SMTP dialogue. */
function failure(err: unknown): object {
  const e = err as { code?: unknown; responseCode?: unknown; command?: unknown }
  return {
    code: typeof e.code === 'string' ? e.code : undefined,
    responseCode: typeof e.responseCode === 'number' ? e.responseCode : undefined,
    command: typeof e.command === 'string' ? e.command.split(' ')[0] : undefined,
  }
}

class SmtpMailer implements Mailer {
  readonly #transport: Transporter
  constructor(
    private readonly settings: MailSettings,
    smtpUrl: string,
    private readonly log: MailLog,
  ) {
    this.#transport = nodemailer.createTransport({ url: smtpUrl, ...SMTP_TIMEOUTS })
  }

  async send(mail: Mail): Promise<boolean> {
    try {
      const info = await this.#transport.sendMail({ from: this.settings.from, ...mail })
      this.log.info({ subject: mail.subject, messageId: info.messageId }, 'mail sent')
      return true
    } catch (err) {
      this.log.error({ subject: mail.subject, cause: failure(err) }, 'mail could not be sent')
      return false
    }
  }

  close(): void {
    this.#transport.close()
  }
}

/**
 * Mails as files, one .eml per message (RFC 5322, what SMTP would have carried), readable by any
 * mail program. The files hold live links: the directory is made private to the process's user.
 */
class OutboxMailer implements Mailer {
  readonly #transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' })
  constructor(
    private readonly settings: MailSettings,
    private readonly log: MailLog,
  ) {}

  async send(mail: Mail): Promise<boolean> {
    try {
      const info = await this.#transport.sendMail({ from: this.settings.from, ...mail })
      await mkdir(this.settings.outboxDir, { recursive: true, mode: 0o700 })
      const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomBytes(4).toString('hex')}.eml`
      await writeFile(join(this.settings.outboxDir, name), info.message as Buffer, { mode: 0o600, flag: 'wx' })
      this.log.info({ subject: mail.subject, file: name, outbox: this.settings.outboxDir }, 'mail written to the outbox (no SMTP_URL)')
      return true
    } catch (err) {
      this.log.error({ subject: mail.subject, cause: failure(err) }, 'mail could not be written to the outbox')
      return false
    }
  }

  close(): void {}
}
