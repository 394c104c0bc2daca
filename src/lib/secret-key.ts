import { randomBytes } from 'node:crypto'
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type SealedBox, createSealedBox } from './sealed-box.js'

/*
 * Where the key-encryption key of sealed secrets (src/lib/sealed-box.ts) comes from
 * (docs/decisions/011-second-factor.md, README "Two-factor authentication"): SECRET_KEY when set;
 * else, with the embedded database, a key file beside the data (DATA_DIR/secret-key), created
 * once; else (PostgreSQL without SECRET_KEY) nothing: a key file on one host would not reach the
 * other processes sharing the database, and a key stored in the database would sit beside what
 * it protects. Then what needs the key (TOTP enrolment) is unavailable and everything else works.
 */

export const SECRET_KEY_FILE = 'secret-key'
/** 32 random bytes, as 64 hex digits and an optional newline. */
const KEY_FILE_PATTERN = /^[0-9a-f]{64}\n?$/

export class SecretKeyError extends Error {
  override name = 'SecretKeyError'
}

export type SecretKeySource =
  | { readonly kind: 'setting' | 'key-file'; readonly box: SealedBox }
  /** PostgreSQL and no SECRET_KEY. */
  | { readonly kind: 'unavailable' }

export interface SecretKeySettings {
  readonly secretKey: string | undefined
  readonly databaseUrl: string | undefined
  readonly dataDir: string
}

/** Resolved once at start-up (src/services.ts createServices). */
export async function resolveSecretKey(settings: SecretKeySettings): Promise<SecretKeySource> {
  if (settings.secretKey !== undefined) return { kind: 'setting', box: createSealedBox(settings.secretKey) }
  if (settings.databaseUrl !== undefined) return { kind: 'unavailable' }
  return { kind: 'key-file', box: createSealedBox(await keyFile(settings.dataDir)) }
}

/**
 * The key file's bytes: created with mode 0600 by an exclusive create (two processes starting at
 * once cannot both write one), read when it exists. A file others may read, or of the wrong
 * shape (cut short, edited), is refused with an error naming it rather than replaced: replacing
 * it would make every sealed secret unreadable.
 */
async function keyFile(dataDir: string): Promise<Buffer> {
  const path = join(dataDir, SECRET_KEY_FILE)
  await mkdir(dataDir, { recursive: true })
  try {
    await writeFile(path, `${randomBytes(32).toString('hex')}\n`, { flag: 'wx', mode: 0o600 })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  }
  const info = await stat(path)
  if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
    throw new SecretKeyError(
      `${path} can be read by other users (mode ${(info.mode & 0o777).toString(8)}); run chmod 600 on it, or set SECRET_KEY instead`,
    )
  }
  const text = await readFile(path, 'utf8')
  if (!KEY_FILE_PATTERN.test(text)) {
    throw new SecretKeyError(`${path} is not a Gatehouse key file (64 hex digits); restore it from a backup, or set SECRET_KEY instead`)
  }
  return Buffer.from(text.trim(), 'hex')
}
