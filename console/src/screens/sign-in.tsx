import { useState } from 'preact/hooks'
import { signIn, type SessionInfo } from '../api'
import { Heading, useLocale } from '../ui'

/** The token form. The token goes to the service once, in a POST body; the page keeps no copy of it after. */
export function SignIn({ notice, onSignedIn }: { notice?: 'refused' | 'ended'; onSignedIn: (info: SessionInfo) => void }) {
  const { t } = useLocale()
  const [token, setToken] = useState('')
  const [busy, setBusy] = useState(false)
  const [refused, setRefused] = useState(notice === 'refused')
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    const info = await signIn({ token: token.trim() }).catch(() => undefined)
    setBusy(false)
    if (info) {
      setToken('')
      onSignedIn(info)
    } else {
      setRefused(false)
      // Set again on the next frame so a second refusal is announced again.
      requestAnimationFrame(() => setRefused(true))
    }
  }
  return (
    <section class="sign-in">
      <Heading>{t.signInTitle}</Heading>
      {refused && (
        <p class="alert" role="alert">
          {t.signInRefused}
        </p>
      )}
      {!refused && notice === 'ended' && (
        <p class="alert" role="alert">
          {t.sessionEnded}
        </p>
      )}
      <form onSubmit={(event) => void submit(event)} class="card">
        <div class="field">
          <label for="token">{t.apiToken}</label>
          <input
            id="token"
            name="token"
            type="text"
            dir="ltr"
            autoComplete="off"
            spellcheck={false}
            value={token}
            onInput={(event) => setToken(event.currentTarget.value)}
            aria-describedby="token-help"
          />
          <p class="hint" id="token-help">
            {t.signInHelp}
          </p>
        </div>
        <button type="submit" class="primary" disabled={busy}>
          {t.signIn}
        </button>
      </form>
    </section>
  )
}
