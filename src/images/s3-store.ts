import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3'
import type { Readable } from 'node:stream'
import type { ImageStore } from './image-store.js'

export interface S3StoreOptions {
  bucket: string
  /** Empty, or ending in `/`. */
  prefix: string
  /** S3_ENDPOINT: another S3-compatible server, addressed path-style. */
  endpoint?: string
  region?: string
}

const isMissing = (error: unknown) => error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404

/**
 * An S3 bucket that every instance shares. A PUT is atomic: the object appears whole or not at all. Credentials
 * come from the SDK's usual chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, a role).
 */
export function s3Store({ bucket, prefix, endpoint, region }: S3StoreOptions): ImageStore {
  const client = new S3Client({
    region: region ?? 'us-east-1',
    ...(endpoint === undefined ? {} : { endpoint, forcePathStyle: true }),
    // Checksums only where S3 requires them: other S3-compatible servers may not know the newer headers.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  })
  const Key = (key: string) => `${prefix}${key}`
  return {
    async put(key, bytes, contentType) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: Key(key), Body: bytes, ContentType: contentType }))
    },
    async get(key) {
      try {
        const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: Key(key) }))
        return { body: answer.Body as Readable, bytes: answer.ContentLength ?? 0 }
      } catch (error) {
        if (isMissing(error)) return undefined
        throw error
      }
    },
    async size(key) {
      try {
        return (await client.send(new HeadObjectCommand({ Bucket: bucket, Key: Key(key) }))).ContentLength
      } catch (error) {
        if (isMissing(error)) return undefined
        throw error
      }
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: Key(key) }))
    },
  }
}
