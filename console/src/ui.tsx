import { createContext, type ComponentChildren } from 'preact'
import { useContext, useEffect, useRef, useState } from 'preact/hooks'
import { messages, type Language, type Messages } from './i18n'
import { followLink } from './router'

export interface Locale {
  language: Language
  t: Messages
}

export const LocaleContext = createContext<Locale>({ language: 'en', t: messages.en })
export const useLocale = () => useContext(LocaleContext)

/** Element ids from JSON Pointers: `/items/0/price` → `f-items-0-price`. */
export const fieldId = (name: string) => `f${name.replace(/[^A-Za-z0-9]+/g, '-')}`

interface FieldProps {
  name: string
  label: string
  value: string
  onValue: (value: string) => void
  error?: string
  hint?: string
  type?: string
  inputMode?: 'decimal' | 'numeric' | 'url' | 'text'
  required?: boolean
  autoComplete?: string
  dir?: 'ltr' | 'rtl' | 'auto'
  /** Makes what is typed acceptable as it is typed (written back at once, the caret kept where it was). */
  normalise?: (text: string) => string
  onBlur?: () => void
  /** A class for the field's box besides `field`. */
  variant?: string
}

/** A labelled input; an error becomes aria-invalid and part of its accessible description. */
export function Field({
  name,
  label,
  value,
  onValue,
  error,
  hint,
  type = 'text',
  inputMode,
  required,
  autoComplete = 'off',
  dir,
  normalise,
  onBlur,
  variant,
}: FieldProps) {
  const id = fieldId(name)
  const described = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(' ')
  return (
    <div class={variant ? `field ${variant}` : 'field'}>
      <label for={id}>{label}</label>
      <input
        id={id}
        name={name}
        type={type}
        inputMode={inputMode}
        value={value}
        dir={dir}
        required={required}
        autoComplete={autoComplete}
        spellcheck={false}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={described || undefined}
        onInput={(event) => {
          const input = event.currentTarget
          const typed = input.value
          const made = normalise ? normalise(typed) : typed
          if (made !== typed && normalise) {
            const caret = normalise(typed.slice(0, input.selectionStart ?? typed.length)).length
            input.value = made
            input.setSelectionRange(caret, caret)
          }
          onValue(made)
        }}
        onBlur={onBlur}
      />
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {error && (
        <p class="error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  )
}

interface SelectProps {
  name: string
  label: string
  value: string
  options: Array<{ value: string; label: string }>
  onValue: (value: string) => void
  error?: string
}

export function Select({ name, label, value, options, onValue, error }: SelectProps) {
  const id = fieldId(name)
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select
        id={id}
        name={name}
        value={value}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
        onChange={(event) => onValue(event.currentTarget.value)}
      >
        {options.map((option) => (
          <option value={option.value} key={option.value}>
            {option.label}
          </option>
        ))}
      </select>
      {error && (
        <p class="error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  )
}

/** A list of problems, announced when it appears; each entry moves focus to its field. */
export function ErrorSummary({ title, entries }: { title: string; entries: Array<{ name?: string; label: string; message: string }> }) {
  const ref = useRef<HTMLDivElement>(null)
  useEffect(() => ref.current?.focus(), [entries])
  return (
    <div class="alert" role="alert" tabIndex={-1} ref={ref}>
      <p>{title}</p>
      <ul>
        {entries.map((entry, index) => (
          <li key={index}>
            {entry.name ? (
              <a
                href={`#${fieldId(entry.name)}`}
                onClick={(event) => {
                  event.preventDefault()
                  document.getElementById(fieldId(entry.name as string))?.focus()
                }}
              >
                {entry.label}
              </a>
            ) : (
              entry.label
            )}
            {entry.label ? ': ' : ''}
            <bdi>{entry.message}</bdi>
          </li>
        ))}
      </ul>
    </div>
  )
}

/** A modal confirmation (the native dialog: focus is trapped and Escape cancels). */
export function ConfirmDialog(props: {
  open: boolean
  question: string
  confirm: string
  /** The button that changes nothing; "Cancel" unless named. */
  dismiss?: string
  onConfirm: () => void
  onCancel: () => void
}) {
  const { t } = useLocale()
  const ref = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const dialog = ref.current
    if (!dialog) return
    if (props.open && !dialog.open) dialog.showModal()
    if (!props.open && dialog.open) dialog.close()
  }, [props.open])
  const questionId = useRef(`q${Math.random().toString(36).slice(2)}`).current
  return (
    <dialog ref={ref} aria-labelledby={questionId} onCancel={props.onCancel}>
      <p id={questionId}>{props.question}</p>
      <div class="actions">
        <button type="button" class="danger" onClick={props.onConfirm}>
          {props.confirm}
        </button>
        <button type="button" onClick={props.onCancel}>
          {props.dismiss ?? t.cancel}
        </button>
      </div>
    </dialog>
  )
}

/** Time left until `expiresAtUnix`, counting down by itself; `onEnded` is called once it has run out. */
export function TimeLeft({ expiresAtUnix, onEnded }: { expiresAtUnix: number; onEnded?: () => void }) {
  const { t } = useLocale()
  const [now, setNow] = useState(Date.now())
  const left = expiresAtUnix * 1000 - now
  useEffect(() => {
    if (left <= 0) {
      onEnded?.()
      return
    }
    const timer = setInterval(() => setNow(Date.now()), 1000)
    return () => clearInterval(timer)
  }, [left <= 0])
  if (left <= 0) return <span class="time-left">{t.ended}</span>
  const seconds = Math.floor(left / 1000)
  const hh = Math.floor(seconds / 3600)
  const mm = String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')
  const ss = String(seconds % 60).padStart(2, '0')
  return <span class="time-left">{t.timeLeft(`${hh}:${mm}:${ss}`)}</span>
}

export function Link({ href, children, class: className }: { href: string; children: ComponentChildren; class?: string }) {
  return (
    <a href={href} onClick={followLink} class={className}>
      {children}
    </a>
  )
}

/** A screen's heading, focused when the screen opens so a screen reader announces where the user is. */
export function Heading({ children }: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null)
  useEffect(() => ref.current?.focus({ preventScroll: true }), [])
  return (
    <h1 tabIndex={-1} ref={ref}>
      {children}
    </h1>
  )
}

export function formatTime(iso: string | number, language: Language): string {
  return new Intl.DateTimeFormat(language === 'ar' ? 'ar' : 'en', { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(iso))
}
