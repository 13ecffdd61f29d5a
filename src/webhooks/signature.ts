import { createHmac, randomBytes } from 'node:crypto'

/*
 * Standard Webhooks signing (docs/api.md#webhooks): `webhook-signature` is `v1,<base64 HMAC-SHA256>` of
 * `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the bytes the secret's base64 part decodes to; one entry
 * per signing secret, space-separated. test/webhook-delivery.test.ts verifies it with the `standardwebhooks`
 * package, the specification's reference library.
 */

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
