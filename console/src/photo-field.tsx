import { useEffect, useRef, useState } from 'preact/hooks'
import type { Messages } from './i18n'
import { Field, fieldId, useLocale } from './ui'
import { uploadPhoto, type UploadOutcome } from './upload'

type Refusal = Exclude<UploadOutcome, { image: unknown }>

function refusalText(t: Messages, refusal: Refusal): string {
  if ('refused' in refusal) return refusal.refused
  return 'status' in refusal ? t.uploadFailed(refusal.status) : t.uploadOffline
}

/**
 * A photo the service hosts: shown as a preview. Other addresses are not loaded while they are typed (each
 * keystroke would be a request to someone else's server), and a hosted url on another origin only over https,
 * as the page's Content-Security-Policy allows.
 */
function previewOf(url: string): string | undefined {
  try {
    const parsed = new URL(url)
    const hosted = /^\/images\/[^/]+$/.test(parsed.pathname) && parsed.search === ''
    return hosted && (parsed.origin === location.origin || parsed.protocol === 'https:') ? parsed.href : undefined
  } catch {
    return undefined
  }
}

interface PhotoFieldProps {
  /** The image URL's JSON pointer (`/brand/imageUrl`); the file input is named after it with `#file`. */
  pointer: string
  photoLabel: string
  urlLabel: string
  url: string
  onUrl: (url: string) => void
  urlError?: string
  /** The preview's accessible name: the brand's or the item's name. */
  alt: string
  /** True while a photo is being sent, false once it is done (or the field goes away). */
  onBusy: (busy: boolean) => void
}

/**
 * A photo input beside an image URL field: choosing a photo (or taking one: `accept="image/*"` makes a phone offer
 * its camera) sends it at once, shows how far it got, then the hosted photo, and puts its url in the URL field.
 * A refusal is shown at the photo input; nothing else in the form changes.
 */
export function PhotoField({ pointer, photoLabel, urlLabel, url, onUrl, urlError, alt, onBusy }: PhotoFieldProps) {
  const { t } = useLocale()
  /** undefined: nothing being sent; a number: the fraction sent; 'checking': sent, the service is at work. */
  const [sending, setSending] = useState<number | 'checking' | undefined>()
  const [refusal, setRefusal] = useState<Refusal | undefined>()
  const [broken, setBroken] = useState<string | undefined>()
  const current = useRef<AbortController | undefined>()
  useEffect(
    () => () => {
      current.current?.abort()
      onBusy(false)
    },
    [],
  )

  const send = async (file: File) => {
    current.current?.abort()
    const controller = new AbortController()
    current.current = controller
    setRefusal(undefined)
    setSending(0)
    onBusy(true)
    const outcome = await uploadPhoto(file, (sent) => setSending(sent ?? 'checking'), controller.signal)
    if (controller.signal.aborted) return
    current.current = undefined
    setSending(undefined)
    onBusy(false)
    if ('image' in outcome) onUrl(outcome.image.url)
    else setRefusal(outcome)
  }

  const fileId = fieldId(`${pointer}#file`)
  const errorId = `${fileId}-error`
  const preview = previewOf(url)
  const shown = preview !== undefined && preview !== broken ? preview : undefined
  return (
    <div class="photo">
      <div class="photo-pick">
        <span class="preview" aria-hidden={shown ? undefined : 'true'}>
          {shown && <img src={shown} alt={alt} onError={() => setBroken(shown)} />}
        </span>
        <div class="photo-choose">
          <input
            id={fileId}
            name={`${pointer}#file`}
            type="file"
            accept="image/*"
            class="file"
            aria-invalid={refusal ? 'true' : undefined}
            aria-describedby={refusal ? errorId : undefined}
            onChange={(event) => {
              const input = event.currentTarget
              const file = input.files?.[0]
              // Emptied so that choosing the same file again (after a refusal) is a change again.
              input.value = ''
              if (file) void send(file)
            }}
          />
          <label for={fileId} class="button">
            {photoLabel}
          </label>
          {sending !== undefined &&
            (sending === 'checking' ? (
              <progress key="checking" aria-label={t.uploading} />
            ) : (
              <progress key="sending" max={1} value={sending} aria-label={t.uploading} />
            ))}
          {refusal && (
            <p class="error" id={errorId}>
              {refusalText(t, refusal)}
            </p>
          )}
        </div>
      </div>
      <div class="compact">
        <Field name={pointer} label={urlLabel} value={url} type="url" dir="ltr" inputMode="url" error={urlError} onValue={onUrl} />
      </div>
    </div>
  )
}
