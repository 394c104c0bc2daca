import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'

/*
 * Reads back the mails OutboxMailer wrote (docs/accounts.md "Mail"), for `gatehouse outbox`: the .eml
 * files are quoted-printable, so their links cannot be copied or grepped as they stand. The
 * decoding is mailparser's, the parser the mail tests already read these files with, so the
 * command and the tests agree on what a mail says. Nothing here logs: the links are live.
 */

export interface OutboxMail {
  file: string
  date: string | null
  to: string
  subject: string
  text: string
  links: string[]
}

/** Every link of a mail's plain text, in order (the mails put each on a line of its own). */
export function linksOf(text: string): string[] {
  return [...text.matchAll(/https?:\/\/[^\s<>"]+/g)].map((m) => m[0])
}

/**
 * The newest `limit` mails in `dir`, newest first, to `to` (any case) when given. File names
 * start with the time they were written, so they sort by age without opening them. A missing
 * directory holds no mail.
 */
export async function readOutbox(dir: string, options: { to?: string; limit: number }): Promise<OutboxMail[]> {
  let names: string[]
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith('.eml'))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  names.sort().reverse()
  const wanted = options.to?.trim().toLowerCase()
  const mails: OutboxMail[] = []
  // Loaded here, not at start: mailparser is costly to import, and only
  // `gatehouse outbox` reads mail back, yet every process loads this module through src/services.ts.
  const { simpleParser } = await import('mailparser')
  for (const file of names) {
    if (mails.length >= options.limit) break
    const parsed = await simpleParser(await readFile(join(dir, file)))
    const to = [parsed.to ?? []]
      .flat()
      .flatMap((a) => a.value.map((v) => v.address ?? ''))
      .join(', ')
    if (wanted !== undefined && !to.toLowerCase().split(', ').includes(wanted)) continue
    const text = (parsed.text ?? '').trimEnd()
    mails.push({ file, date: parsed.date?.toISOString() ?? null, to, subject: parsed.subject ?? '', text, links: linksOf(text) })
  }
  return mails
}
