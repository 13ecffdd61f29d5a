import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import type { Config } from '../config.js'

/** An image's bytes as stored: whole in memory (a file) or as a stream (an object store's answer). */
export interface StoredImage {
  body: Buffer | Readable
  bytes: number
}

/** Where uploaded images are kept, by key (`img_….jpg`). Keys are never reused: nothing is ever overwritten. */
export interface ImageStore {
  /** Resolves once the bytes are durable, whole: a reader never finds part of an image. */
  put(key: string, bytes: Buffer, contentType: string): Promise<void>
  /** Undefined when there is no such image. */
  get(key: string): Promise<StoredImage | undefined>
  /** Its size in bytes, or undefined when there is no such image. */
  size(key: string): Promise<number | undefined>
  /** Done also when there was no such image. */
  delete(key: string): Promise<void>
}

const isMissing = (error: unknown) => (error as { code?: unknown }).code === 'ENOENT'

/**
 * A directory: each image one file, written under a temporary name, flushed, then renamed into place (atomic on
 * one file system) and the directory flushed, so a crash leaves either no file or the whole image.
 */
export function directoryStore(directory: string): ImageStore {
  let made: Promise<unknown> | undefined
  const path = (key: string) => join(directory, key)
  return {
    async put(key, bytes) {
      await (made ??= mkdir(directory, { recursive: true }))
      const temporary = path(`.${key}.${randomBytes(6).toString('hex')}.tmp`)
      const file = await open(temporary, 'wx')
      try {
        await file.writeFile(bytes)
        await file.sync()
      } finally {
        await file.close()
      }
      await rename(temporary, path(key)).catch(async (error: unknown) => {
        await rm(temporary, { force: true })
        throw error
      })
      const folder = await open(directory, 'r')
      await folder.sync().finally(() => folder.close())
    },
    async get(key) {
      try {
        const body = await readFile(path(key))
        return { body, bytes: body.length }
      } catch (error) {
        if (isMissing(error)) return undefined
        throw error
      }
    },
    async size(key) {
      try {
        return (await stat(path(key))).size
      } catch (error) {
        if (isMissing(error)) return undefined
        throw error
      }
    },
    async delete(key) {
      await rm(path(key), { force: true })
    },
  }
}

/** IMAGE_STORE_URL's store. The S3 client is loaded only when used: it is large, and most installations keep files. */
export async function openImageStore(config: Pick<Config, 'IMAGE_STORE_URL' | 'S3_ENDPOINT' | 'AWS_REGION'>): Promise<ImageStore> {
  const url = config.IMAGE_STORE_URL
  if (url.startsWith('file:')) return directoryStore(url.slice('file:'.length))
  const [bucket = '', ...prefix] = url.slice('s3://'.length).split('/')
  const { s3Store } = await import('./s3-store.js')
  return s3Store({
    bucket,
    prefix: prefix
      .filter((part) => part !== '')
      .map((part) => `${part}/`)
      .join(''),
    endpoint: config.S3_ENDPOINT,
    region: config.AWS_REGION,
  })
}
