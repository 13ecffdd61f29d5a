import { webNameTyped } from './form-values'
import { fieldId, useLocale } from './ui'

interface WebNameFieldProps {
  name: string
  label: string
  value: string
  onValue: (value: string) => void
  /** Left empty: the name goes back to following the English name. */
  onCleared: () => void
  error?: string
}

/**
 * A web name (`urlSafeName`), derived from the English name and kept small; editable, and made acceptable as it is
 * typed (a space becomes "-"), with a hint that shows while it is being edited.
 */
export function WebNameField({ name, label, value, onValue, onCleared, error }: WebNameFieldProps) {
  const { t } = useLocale()
  const id = fieldId(name)
  const described = [`${id}-hint`, error && `${id}-error`].filter(Boolean).join(' ')
  return (
    <div class="field web-name">
      <label for={id}>{label}</label>
      <input
        id={id}
        name={name}
        value={value}
        dir="ltr"
        autoComplete="off"
        autoCapitalize="none"
        spellcheck={false}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={described}
        onInput={(event) => {
          const input = event.currentTarget
          const typed = input.value
          const cleaned = webNameTyped(typed)
          if (cleaned !== typed) {
            // Written back at once, with the caret where it was, so typing goes on where it was.
            const caret = webNameTyped(typed.slice(0, input.selectionStart ?? typed.length)).length
            input.value = cleaned
            input.setSelectionRange(caret, caret)
          }
          onValue(cleaned)
        }}
        onBlur={() => {
          if (value === '') onCleared()
        }}
      />
      <p class="hint" id={`${id}-hint`}>
        {t.webNameHint}
      </p>
      {error && (
        <p class="error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  )
}
