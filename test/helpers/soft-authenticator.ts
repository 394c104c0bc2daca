import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto'
import { isoCBOR } from '@simplewebauthn/server/helpers'

/*
 * A WebAuthn authenticator in software, for integration tests through app.inject: it answers
 * registration and authentication options as a browser would hand them to the server (the JSON
 * of @simplewebauthn/browser), with an ES256 key, "none" attestation, and the user present and
 * verified unless told otherwise. The browser tests use Chromium's virtual authenticator instead.
 */

const b64u = (bytes: Uint8Array | Buffer) => Buffer.from(bytes).toString('base64url')
const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest()

const UP = 0x01
const UV = 0x04
const AT = 0x40

export interface SoftCredential {
  readonly id: Buffer
  readonly privateKey: KeyObject
  readonly x: Buffer
  readonly y: Buffer
  /** The signature counter the next assertion reports (0: a passkey that does not count). */
  counter: number
  userHandle?: string
}

export interface Overrides {
  origin?: string
  rpId?: string
  userVerified?: boolean
  type?: string
  challenge?: string
}

export function newCredential(counter = 0): SoftCredential {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const jwk = publicKey.export({ format: 'jwk' })
  return { id: randomBytes(32), privateKey, x: Buffer.from(jwk.x!, 'base64url'), y: Buffer.from(jwk.y!, 'base64url'), counter }
}

function counterBytes(n: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n)
  return b
}

function clientData(type: string, challenge: string, origin: string): Buffer {
  return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }))
}

/** What startRegistration returns for `options` (PublicKeyCredentialCreationOptionsJSON). */
export function registrationResponse(
  credential: SoftCredential,
  options: { challenge: string; rp: { id?: string }; user: { id: string } },
  origin: string,
  o: Overrides = {},
) {
  credential.userHandle = options.user.id
  const cose = new Map<number, number | Uint8Array>([
    [1, 2],
    [3, -7],
    [-1, 1],
    [-2, new Uint8Array(credential.x)],
    [-3, new Uint8Array(credential.y)],
  ])
  const idLength = Buffer.alloc(2)
  idLength.writeUInt16BE(credential.id.length)
  const flags = UP | AT | (o.userVerified === false ? 0 : UV)
  const authData = Buffer.concat([
    sha256(o.rpId ?? options.rp.id ?? ''),
    Buffer.from([flags]),
    counterBytes(credential.counter),
    Buffer.alloc(16),
    idLength,
    credential.id,
    Buffer.from(isoCBOR.encode(cose)),
  ])
  const attestationObject = isoCBOR.encode(
    new Map<string, string | Map<string, string> | Uint8Array>([
      ['fmt', 'none'],
      ['attStmt', new Map<string, string>()],
      ['authData', new Uint8Array(authData)],
    ]),
  )
  return {
    id: b64u(credential.id),
    rawId: b64u(credential.id),
    type: 'public-key',
    clientExtensionResults: {},
    authenticatorAttachment: 'platform',
    response: {
      clientDataJSON: b64u(clientData(o.type ?? 'webauthn.create', o.challenge ?? options.challenge, o.origin ?? origin)),
      attestationObject: b64u(attestationObject),
      transports: ['internal'],
    },
  }
}

/** What startAuthentication returns for `options` (PublicKeyCredentialRequestOptionsJSON); the counter moves on first. */
export function authenticationResponse(
  credential: SoftCredential,
  options: { challenge: string; rpId?: string },
  origin: string,
  o: Overrides = {},
) {
  if (credential.counter > 0) credential.counter += 1
  const flags = UP | (o.userVerified === false ? 0 : UV)
  const authData = Buffer.concat([sha256(o.rpId ?? options.rpId ?? ''), Buffer.from([flags]), counterBytes(credential.counter)])
  const data = clientData(o.type ?? 'webauthn.get', o.challenge ?? options.challenge, o.origin ?? origin)
  const signature = sign('sha256', Buffer.concat([authData, sha256(data)]), credential.privateKey)
  return {
    id: b64u(credential.id),
    rawId: b64u(credential.id),
    type: 'public-key',
    clientExtensionResults: {},
    authenticatorAttachment: 'platform',
    response: {
      clientDataJSON: b64u(data),
      authenticatorData: b64u(authData),
      signature: b64u(signature),
      ...(credential.userHandle ? { userHandle: credential.userHandle } : {}),
    },
  }
}
