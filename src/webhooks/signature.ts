import { createHmac, randomBytes } from 'node:crypto'

/* Standard Webhooks signing: the HMAC key is the bytes the secret's base64 part decodes to. */

const PREFIX = 'whsec_'

/** 32 random bytes: above the contract's 24, the size the reference libraries generate. */
export function generateSecret(): string {
  return PREFIX + randomBytes(32).toString('base64')
}

export function signatureHeader(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  const content = `${id}.${timestampSeconds}.${body}`
  return secrets
    .map(
      (secret) =>
        `v1,${createHmac('sha256', Buffer.from(secret.slice(PREFIX.length), 'base64'))
          .update(content)
          .digest('base64')}`,
    )
    .join(' ')
}
