import { useState } from 'preact/hooks'
import { currentSession, linkOwner, signIn, type SessionInfo } from '../api'
import { Heading, useLocale } from '../ui'

/** An opened sign-in link, before anything is spent: whose it is, and the session it would replace. */
export interface OpenedLink {
  code: string
  owner: SessionInfo
  current: SessionInfo | undefined
}

/** Looks the link up without spending it; undefined when it is unknown, spent or expired. */
export async function openLink(code: string): Promise<OpenedLink | undefined> {
  const [owner, current] = await Promise.all([linkOwner(code), currentSession()])
  return owner && { code, owner, current }
}

/**
 * Opening a link signs no one in: another site can send a browser to a link of its own, and a scanner can run the
 * page. The code is spent only by a click on the button naming whose link it is.
 */
export function SignInLink({
  link,
  onSignedIn,
  onRefused,
  onStay,
}: {
  link: OpenedLink
  onSignedIn: (info: SessionInfo) => void
  onRefused: () => void
  onStay: (info: SessionInfo) => void
}) {
  const { t } = useLocale()
  const [busy, setBusy] = useState(false)
  const { owner, current } = link
  const confirm = async () => {
    setBusy(true)
    const info = await signIn({ link: link.code }).catch(() => undefined)
    setBusy(false)
    if (info) onSignedIn(info)
    else onRefused()
  }
  return (
    <section class="sign-in">
      <Heading>{t.linkTitle}</Heading>
      <div class="card">
        <p>
          {t.linkIsFor} <bdi>{owner.provider.name}</bdi>.
        </p>
        {current && (
          <p>
            {t.signedInNowAs} <bdi>{current.provider.name}</bdi>. {t.linkEndsSession}
          </p>
        )}
        <p class="hint">{t.linkHint}</p>
        <div class="actions">
          <button type="button" class="primary" disabled={busy} onClick={() => void confirm()}>
            {t.signInAs} <bdi>{owner.provider.name}</bdi>
          </button>
          {current && (
            <button type="button" onClick={() => onStay(current)}>
              {t.stayAs} <bdi>{current.provider.name}</bdi>
            </button>
          )}
        </div>
      </div>
    </section>
  )
}
