import { randomBytes } from 'node:crypto'
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type SealedBox, createSealedBox } from './sealed-box.js'

/*
 * Where the key-encryption key of sealed secrets (src/lib/sealed-box.ts: TOTP secrets and the ID
 * Token signing keys) comes from (docs/decisions/011-second-factor.md, docs/operating/configuration.md):
 * SECRET_KEY when set; else, with the embedded database, a key file beside the data
 * (DATA_DIR/secret-key), created once. PostgreSQL without SECRET_KEY is refused: a key file on one
 * host would not reach the other processes sharing the database, a key stored in the database
 * would sit beside what it protects, and a server without a key would be half a server (no
 * authenticator apps, no OpenID Provider, no operator where a second factor is required).
 */

export const SECRET_KEY_FILE = 'secret-key'
/** 32 random bytes, as 64 hex digits and an optional newline. */
const KEY_FILE_PATTERN = /^[0-9a-f]{64}\n?$/

export class SecretKeyError extends Error {
  override name = 'SecretKeyError'
}

export interface SecretKeySource {
  readonly kind: 'setting' | 'key-file'
  readonly box: SealedBox
}

/**
 * The one line a server or a command prints when DATABASE_URL is set without SECRET_KEY: how to
 * make a key (any text of at least 32 characters; src/config-schema.ts).
 */
export const SECRET_KEY_REQUIRED = `SECRET_KEY is required with DATABASE_URL: generate one with  node -p "require('crypto').randomBytes(32).toString('hex')"  and set it (keep it with your database backups; docs/operating/configuration.md)`

export interface SecretKeySettings {
  readonly secretKey: string | undefined
  readonly databaseUrl: string | undefined
  readonly dataDir: string
}

/** Resolved once at start-up (src/services.ts createServices), before the database opens. */
export async function resolveSecretKey(settings: SecretKeySettings): Promise<SecretKeySource> {
  if (settings.secretKey !== undefined) return { kind: 'setting', box: createSealedBox(settings.secretKey) }
  if (settings.databaseUrl !== undefined) throw new SecretKeyError(SECRET_KEY_REQUIRED)
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
