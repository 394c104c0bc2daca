import {
  type CryptoKey,
  type JSONWebKeySet,
  type JWK,
  SignJWT,
  type JWTPayload,
  calculateJwkThumbprint,
  compactVerify,
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  importJWK,
} from 'jose'
import type { Db } from '../../db/connect.js'
import type { SigningAlg } from '../../db/schema.js'
import type { Clock } from '../../lib/clock.js'
import type { SealedBox } from '../../lib/sealed-box.js'
import {
  type SigningKeyRow,
  algorithmsInUse,
  findSigningKey,
  insertSigningKey,
  listAllKeys,
  listPublishedKeys,
  retireKeys,
  withSigningKeyLock,
} from '../../repositories/signing-keys.js'

/*
 * The ID Token signing keys (docs/decisions/014-signing-keys.md): generated at first need, stored
 * with the private JWK sealed, published in the JWKS before they sign (a rotation's next key
 * signs only after ROTATION_DELAY_MS, longer than the JWKS's max-age plus this cache's lifetime),
 * and kept published until the last ID Token they signed has expired (ID_TOKEN_TTL).
 */

export const SIGNING_ALGS = ['RS256', 'ES256', 'EdDSA'] as const satisfies readonly SigningAlg[]
/** The JWKS's Cache-Control max-age. */
export const JWKS_MAX_AGE_SECONDS = 300
/** How long a process trusts its copy of the published keys before reading them again. */
const KEY_CACHE_TTL_MS = 60_000
/** A rotated key signs only after every cached JWKS (max-age) and every process's copy has it. */
export const ROTATION_DELAY_MS = (JWKS_MAX_AGE_SECONDS + (2 * KEY_CACHE_TTL_MS) / 1000) * 1000

export interface PublicKeyInfo {
  kid: string
  alg: SigningAlg
  createdAt: Date
  notBefore: Date
  retiredAt: Date | null
  notAfter: Date | null
}

export interface SigningKeysOptions {
  db: Db
  clock: Clock
  box: SealedBox
  /** ID_TOKEN_TTL: how long after its retirement a key stays published. */
  idTokenTtlMs: number
}

async function newKey(alg: SigningAlg, box: SealedBox, now: Date, notBefore: Date): Promise<SigningKeyRow> {
  const { publicKey, privateKey } = await generateKeyPair(
    alg,
    alg === 'EdDSA' ? { crv: 'Ed25519', extractable: true } : { extractable: true },
  )
  const publicJwk = await exportJWK(publicKey)
  const kid = await calculateJwkThumbprint(publicJwk)
  const privateJwk = await exportJWK(privateKey)
  return {
    kid,
    alg,
    public_jwk: JSON.stringify({ ...publicJwk, kid, use: 'sig', alg }),
    private_jwk_sealed: box.seal(JSON.stringify(privateJwk)),
    created_at: now,
    not_before: notBefore,
    retired_at: null,
    not_after: null,
  }
}

function publicInfo(row: SigningKeyRow): PublicKeyInfo {
  return {
    kid: row.kid,
    alg: row.alg,
    createdAt: row.created_at,
    notBefore: row.not_before,
    retiredAt: row.retired_at,
    notAfter: row.not_after,
  }
}

/** One process's view of the keys: read at most every KEY_CACHE_TTL_MS, private keys opened once. */
export class SigningKeys {
  #published: { rows: SigningKeyRow[]; readAt: number; jwks: string } | undefined
  #verifier: { jwks: string; keySet: ReturnType<typeof createLocalJWKSet> } | undefined
  readonly #privateKeys = new Map<string, Promise<CryptoKey | Uint8Array>>()

  constructor(private readonly options: SigningKeysOptions) {}

  async #rows(): Promise<SigningKeyRow[]> {
    const now = this.options.clock().getTime()
    if (this.#published && now - this.#published.readAt < KEY_CACHE_TTL_MS) return this.#published.rows
    const rows = await listPublishedKeys(this.options.db, new Date(now))
    const keys = rows.map((r) => JSON.parse(r.public_jwk) as JWK)
    this.#published = { rows, readAt: now, jwks: JSON.stringify({ keys }) }
    return rows
  }

  /** The JWKS document (RFC 7517 5): every published key, public members only. */
  async jwks(): Promise<string> {
    await this.#rows()
    return this.#published!.jwks
  }

  /** The key that signs with `alg` now; created (once across processes) when there is none. */
  async #signer(alg: SigningAlg): Promise<SigningKeyRow> {
    const now = this.options.clock()
    const usable = (r: SigningKeyRow) => r.alg === alg && r.not_before <= now && (r.retired_at === null || r.retired_at > now)
    const cached = (await this.#rows()).filter(usable).at(-1)
    if (cached) return cached
    const row = await withSigningKeyLock(this.options.db, async (trx) => {
      const existing = await findSigningKey(trx, alg, now)
      if (existing) return existing
      // The first key of an algorithm signs at once: no token signed by another key exists to
      // be verified against a cached JWKS that lacks it, and a relying party refetches an
      // unknown kid (OpenID Connect Core 10.1.1).
      const created = await newKey(alg, this.options.box, now, now)
      await insertSigningKey(trx, created)
      return created
    })
    this.#published = undefined
    return row
  }

  /** A signed JWT (RFC 7515 compact) of `payload` with the current key of `alg`. */
  async sign(alg: SigningAlg, payload: JWTPayload): Promise<string> {
    const row = await this.#signer(alg)
    let key = this.#privateKeys.get(row.kid)
    if (!key) {
      key = importJWK(JSON.parse(this.options.box.open(row.private_jwk_sealed)) as JWK, alg)
      this.#privateKeys.set(row.kid, key)
    }
    return new SignJWT(payload).setProtectedHeader({ alg, kid: row.kid, typ: 'JWT' }).sign(await key)
  }

  /**
   * The payload of a JWS (RFC 7515 compact) that one of the published keys signed, or undefined
   * for any other: an id_token_hint (OpenID Connect Core 3.1.2.1, RP-Initiated Logout 1.0 2).
   * Only the signature is checked here; the claims are the caller's (src/oauth/identity/id-token-hint.ts).
   */
  async verify(jws: string): Promise<Uint8Array | undefined> {
    const jwks = await this.jwks()
    if (this.#verifier?.jwks !== jwks) {
      this.#verifier = { jwks, keySet: createLocalJWKSet(JSON.parse(jwks) as JSONWebKeySet) }
    }
    try {
      return (await compactVerify(jws, this.#verifier.keySet, { algorithms: [...SIGNING_ALGS] })).payload
    } catch {
      return undefined
    }
  }

  /** Every key, retired ones too, newest first. */
  async list(): Promise<PublicKeyInfo[]> {
    return (await listAllKeys(this.options.db)).map(publicInfo)
  }

  /**
   * Adds the next key of each algorithm in use (RS256 when none is), published now and signing
   * after ROTATION_DELAY_MS; the current key signs until then and stays published for
   * ID_TOKEN_TTL after. Returns the new keys.
   */
  async rotate(): Promise<PublicKeyInfo[]> {
    const now = this.options.clock()
    const from = new Date(now.getTime() + ROTATION_DELAY_MS)
    const until = new Date(from.getTime() + this.options.idTokenTtlMs)
    const added = await withSigningKeyLock(this.options.db, async (trx) => {
      const algs = await algorithmsInUse(trx)
      const rows: SigningKeyRow[] = []
      for (const alg of algs.length === 0 ? (['RS256'] as const) : algs) {
        await retireKeys(trx, alg, from, until)
        const row = await newKey(alg, this.options.box, now, from)
        await insertSigningKey(trx, row)
        rows.push(row)
      }
      return rows
    })
    this.#published = undefined
    return added.map(publicInfo)
  }
}
