import { existsSync } from 'node:fs'
import { chmod, mkdtemp, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SealedBoxError, createSealedBox } from '../../src/lib/sealed-box.js'
import { SECRET_KEY_FILE, SECRET_KEY_REQUIRED, SecretKeyError, resolveSecretKey } from '../../src/lib/secret-key.js'

/* Sealed secrets (src/lib/sealed-box.ts) and where their key comes from (src/lib/secret-key.ts). */

const KEY = 'a key-encryption key of at least 32 characters'

describe('sealed box', () => {
  it('opens what it sealed, and seals equal values differently (random IV)', () => {
    const box = createSealedBox(KEY)
    const a = box.seal('JBSWY3DPEHPK3PXP')
    const b = box.seal('JBSWY3DPEHPK3PXP')
    expect(a).toMatch(/^v1\.[A-Za-z0-9_-]+$/)
    expect(a).not.toBe(b)
    expect(a).not.toContain('JBSWY3DPEHPK3PXP')
    expect(box.open(a)).toBe('JBSWY3DPEHPK3PXP')
    expect(box.open(box.seal(''))).toBe('')
  })

  it('refuses a changed value', () => {
    const box = createSealedBox(KEY)
    const sealed = box.seal('secret')
    const bytes = Buffer.from(sealed.slice(3), 'base64url')
    for (const at of [0, 12, 20, bytes.length - 1]) {
      const changed = Buffer.from(bytes)
      changed[at] = changed[at]! ^ 1
      expect(() => box.open(`v1.${changed.toString('base64url')}`)).toThrow(SealedBoxError)
    }
    expect(() => box.open(`v1.${bytes.subarray(0, 20).toString('base64url')}`)).toThrow(SealedBoxError)
    expect(() => box.open(`v2.${sealed.slice(3)}`)).toThrow(SealedBoxError)
    expect(() => box.open('secret')).toThrow(SealedBoxError)
  })

  it('refuses a value sealed under another key', () => {
    const sealed = createSealedBox(KEY).seal('secret')
    expect(() => createSealedBox(`${KEY}!`).open(sealed)).toThrow(SealedBoxError)
  })
})

describe('the key', () => {
  const dirs: string[] = []
  const dataDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-key-'))
    dirs.push(dir)
    return join(dir, 'data')
  }
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true })
  })

  it('is SECRET_KEY when set, whatever the database', async () => {
    const source = await resolveSecretKey({ secretKey: KEY, databaseUrl: 'postgres://x@localhost/x', dataDir: await dataDir() })
    expect(source.kind).toBe('setting')
    expect(createSealedBox(KEY).open(source.box.seal('x'))).toBe('x')
  })

  it('is refused with PostgreSQL and no SECRET_KEY, with one line saying how to make one, and no key file', async () => {
    const dir = await dataDir()
    const refused = resolveSecretKey({ secretKey: undefined, databaseUrl: 'postgres://x@localhost/x', dataDir: dir })
    await expect(refused).rejects.toThrow(SecretKeyError)
    await expect(refused).rejects.toThrow(SECRET_KEY_REQUIRED)
    expect(SECRET_KEY_REQUIRED).not.toContain('\n')
    expect(SECRET_KEY_REQUIRED).toMatch(/^SECRET_KEY is required with DATABASE_URL: generate one with .*randomBytes\(32\)/)
    // Where an operator reads more: the configuration reference, which exists.
    expect(SECRET_KEY_REQUIRED).toContain('docs/operating/configuration.md')
    expect(existsSync(join(import.meta.dirname, '../../docs/operating/configuration.md'))).toBe(true)
    await expect(stat(join(dir, SECRET_KEY_FILE))).rejects.toThrow()
  })

  it('with the embedded database, is a key file created once with mode 0600 and reused', async () => {
    const dir = await dataDir()
    const first = await resolveSecretKey({ secretKey: undefined, databaseUrl: undefined, dataDir: dir })
    if (first.kind !== 'key-file') throw new Error(`expected a key file, got ${first.kind}`)
    const info = await stat(join(dir, SECRET_KEY_FILE))
    expect(info.mode & 0o777).toBe(0o600)
    const sealed = first.box.seal('kept')
    const second = await resolveSecretKey({ secretKey: undefined, databaseUrl: undefined, dataDir: dir })
    if (second.kind !== 'key-file') throw new Error(`expected a key file, got ${second.kind}`)
    expect(second.box.open(sealed)).toBe('kept')
  })

  it('refuses a key file others may read, or of the wrong shape, rather than replacing it', async () => {
    const dir = await dataDir()
    await resolveSecretKey({ secretKey: undefined, databaseUrl: undefined, dataDir: dir })
    const path = join(dir, SECRET_KEY_FILE)
    await chmod(path, 0o644)
    await expect(resolveSecretKey({ secretKey: undefined, databaseUrl: undefined, dataDir: dir })).rejects.toThrow(SecretKeyError)
    await expect(resolveSecretKey({ secretKey: undefined, databaseUrl: undefined, dataDir: dir })).rejects.toThrow(/chmod 600/)
    await writeFile(path, 'abc\n', { mode: 0o600 })
    await chmod(path, 0o600)
    await expect(resolveSecretKey({ secretKey: undefined, databaseUrl: undefined, dataDir: dir })).rejects.toThrow(
      /not a Gatehouse key file/,
    )
  })
})
