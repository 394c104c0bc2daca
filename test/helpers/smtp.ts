import type { AddressInfo } from 'node:net'
import { type ParsedMail, simpleParser } from 'mailparser'
import { SMTPServer } from 'smtp-server'

/*
 * A real SMTP server in the test process (smtp-server, from the nodemailer project), on a free
 * loopback port, requiring a user and password; every message it accepts is parsed (mailparser)
 * and kept. Point SMTP_URL at `url`.
 */
export interface TestSmtpServer {
  /** smtp://user:password@127.0.0.1:<port> */
  readonly url: string
  readonly port: number
  readonly received: ParsedMail[]
  /** Envelope recipients of each received message, in order. */
  readonly recipients: string[][]
  /** Resolves with the next message that arrives for `to` (or one already there, not yet taken). */
  next(to: string): Promise<ParsedMail>
  close(): Promise<void>
}

export const SMTP_USER = 'gatehouse'
export const SMTP_PASSWORD = 'smtp p@ss'

export async function startSmtpServer(): Promise<TestSmtpServer> {
  const received: ParsedMail[] = []
  const recipients: string[][] = []
  const taken = new Set<ParsedMail>()
  const waiting: Array<{ to: string; resolve: (m: ParsedMail) => void }> = []
  const deliver = () => {
    for (const w of [...waiting]) {
      const i = received.findIndex((m, n) => !taken.has(m) && recipients[n]!.includes(w.to))
      if (i < 0) continue
      taken.add(received[i]!)
      waiting.splice(waiting.indexOf(w), 1)
      w.resolve(received[i]!)
    }
  }
  const server = new SMTPServer({
    secure: false,
    // No TLS here (no certificate on loopback); a real server offers STARTTLS, which nodemailer takes.
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === SMTP_USER && auth.password === SMTP_PASSWORD) callback(null, { user: auth.username })
      else callback(new Error('Invalid username or password'))
    },
    onData(stream, session, callback) {
      simpleParser(stream).then(
        (mail) => {
          received.push(mail)
          recipients.push(session.envelope.rcptTo.map((r) => r.address))
          deliver()
          callback()
        },
        (err: Error) => callback(err),
      )
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.server.address() as AddressInfo
  return {
    url: `smtp://${encodeURIComponent(SMTP_USER)}:${encodeURIComponent(SMTP_PASSWORD)}@127.0.0.1:${port}`,
    port,
    received,
    recipients,
    next(to) {
      return new Promise((resolve) => {
        waiting.push({ to, resolve })
        deliver()
      })
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** The links in a received mail's plain text. */
export function mailLinks(mail: ParsedMail): string[] {
  return [...(mail.text ?? '').matchAll(/https?:\/\/\S+/g)].map((m) => m[0])
}

/** The mail's link to `path`, as a path and query for app.inject. */
export function mailLinkTo(mail: ParsedMail, path: string): string | undefined {
  for (const link of mailLinks(mail)) {
    const url = new URL(link)
    if (url.pathname === path) return `${url.pathname}${url.search}`
  }
  return undefined
}
