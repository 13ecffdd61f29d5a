import { useEffect, useState } from 'preact/hooks'
import createWebhookSchema from 'schema:create-webhook'
import { visibleUrl } from '../../../src/webhooks/bidi-controls'
import type { EventType } from '../../../src/events/types'
import { api, type DeliveriesPage, type Problem, type Webhook } from '../api'
import { EVENT_GROUPS, eventTypeText, OFFERED_EVENT_TYPES } from '../event-types'
import { issueMessage } from '../messages-of'
import { ConfirmDialog, Field, formatTime, Heading, useLocale } from '../ui'
import { validate } from '../validate'

/** A secret shown once (create, rotation), with a copy button. */
function SecretOnce({ secret, onDone }: { secret: string; onDone: () => void }) {
  const { t } = useLocale()
  const [copied, setCopied] = useState(false)
  return (
    <div class="card secret" role="status">
      <p>{t.secretOnce}</p>
      <p>
        <code dir="ltr" class="secret-value">
          {secret}
        </code>
      </p>
      <div class="actions">
        <button
          type="button"
          onClick={() =>
            // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- absent outside secure contexts (plain http).
            void navigator.clipboard?.writeText(secret).then(
              () => setCopied(true),
              () => setCopied(false),
            )
          }
        >
          {t.copy}
        </button>
        <button type="button" onClick={onDone}>
          {t.done}
        </button>
        {copied && <span>{t.copied}</span>}
      </div>
    </div>
  )
}

function Deliveries({ webhookId }: { webhookId: string }) {
  const { t, language } = useLocale()
  const [page, setPage] = useState<DeliveriesPage | undefined>()
  useEffect(() => {
    void api.GET('/api/v1/webhooks/{webhookId}/deliveries', { params: { path: { webhookId }, query: { limit: 50 } } }).then(({ data }) => setPage(data))
  }, [webhookId])
  if (!page) return <p class="loading">{t.loading}</p>
  if (page.data.length === 0) return <p>{t.noDeliveries}</p>
  return (
    // Focusable and named, so a keyboard can scroll it sideways on a phone.
    <div class="table-scroll" tabIndex={0} role="region" aria-label={t.deliveries}>
      <table>
        <thead>
          <tr>
            <th scope="col">{t.time}</th>
            <th scope="col">{t.eventType}</th>
            <th scope="col">{t.attempt}</th>
            <th scope="col">{t.outcome}</th>
            <th scope="col">{t.response}</th>
          </tr>
        </thead>
        <tbody>
          {page.data.map((attempt) => (
            <tr key={`${attempt.eventId}-${attempt.attempt}-${attempt.outcome}`}>
              <td>{formatTime(attempt.at, language)}</td>
              <td>{eventTypeText(t, attempt.type)}</td>
              <td>{attempt.attempt}</td>
              <td>{t[`outcome_${attempt.outcome}`]}</td>
              <td dir="ltr">{attempt.responseStatus ?? attempt.error ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

export function Webhooks() {
  const { t } = useLocale()
  const [endpoints, setEndpoints] = useState<Webhook[] | undefined>()
  const [url, setUrl] = useState('')
  // Every type offered is ticked at first, as the API's default (no `events`) is every type.
  const [types, setTypes] = useState<EventType[]>([...OFFERED_EVENT_TYPES])
  const [urlError, setUrlError] = useState<string | undefined>()
  const [failed, setFailed] = useState<string | undefined>()
  const [secret, setSecret] = useState<string | undefined>()
  const [open, setOpen] = useState<string | undefined>()
  const [deleting, setDeleting] = useState<Webhook | undefined>()

  const load = async () => {
    const { data } = await api.GET('/api/v1/webhooks')
    if (data) setEndpoints(data.data)
  }
  useEffect(() => void load(), [])

  const failure = (error: unknown) => setFailed((error as Problem | undefined)?.detail ?? t.v_other)

  const add = async (event: Event) => {
    event.preventDefault()
    setFailed(undefined)
    const body = { url: url.trim(), events: types }
    const issues = validate(createWebhookSchema, body)
    const urlIssue = issues.find((issue) => issue.pointer === '/url')
    setUrlError(urlIssue && issueMessage(t, urlIssue))
    if (issues.length > 0) {
      if (!urlIssue) setFailed(issueMessage(t, issues[0] as (typeof issues)[number]))
      return
    }
    const { data, error } = await api.POST('/api/v1/webhooks', { body })
    if (!data) {
      const problem = error as Problem | undefined
      const atUrl = problem?.errors?.find((detail) => detail.pointer === '/url')
      if (atUrl) setUrlError(atUrl.detail)
      else failure(problem)
      return
    }
    setUrl('')
    setSecret(data.secret)
    await load()
  }

  const rotate = async (webhook: Webhook) => {
    const { data, error } = await api.POST('/api/v1/webhooks/{webhookId}/rotate-secret', { params: { path: { webhookId: webhook.id } } })
    if (data) setSecret(data.secret)
    else failure(error)
  }
  const enable = async (webhook: Webhook) => {
    const { error } = await api.POST('/api/v1/webhooks/{webhookId}/enable', { params: { path: { webhookId: webhook.id } } })
    if (error) failure(error)
    await load()
  }
  const remove = async () => {
    const webhook = deleting
    setDeleting(undefined)
    if (!webhook) return
    const { error } = await api.DELETE('/api/v1/webhooks/{webhookId}', { params: { path: { webhookId: webhook.id } } })
    if (error) failure(error)
    await load()
  }

  return (
    <section>
      <Heading>{t.webhooks}</Heading>
      {failed && (
        <p class="alert" role="alert">
          {t.requestFailed} <bdi>{failed}</bdi>
        </p>
      )}
      {secret && <SecretOnce secret={secret} onDone={() => setSecret(undefined)} />}
      <form noValidate onSubmit={(event) => void add(event)} class="card">
        <Field name="/url" label={t.webhookUrl} value={url} type="url" dir="ltr" inputMode="url" error={urlError} onValue={setUrl} />
        <fieldset class="event-types">
          <legend>{t.eventTypes}</legend>
          {EVENT_GROUPS.map((group) => (
            <fieldset key={group.legend} class="checks">
              <legend>{t[group.legend]}</legend>
              {group.types.map((type) => (
                <label key={type} class="check">
                  <input
                    type="checkbox"
                    name="/events"
                    value={type}
                    checked={types.includes(type)}
                    onChange={(event) => {
                      const on = event.currentTarget.checked
                      setTypes(on ? OFFERED_EVENT_TYPES.filter((x) => x === type || types.includes(x)) : types.filter((x) => x !== type))
                    }}
                  />
                  {eventTypeText(t, type)}
                </label>
              ))}
            </fieldset>
          ))}
        </fieldset>
        <button type="submit" class="primary">
          {t.addWebhook}
        </button>
      </form>
      <h2>{t.webhookEndpoints}</h2>
      {!endpoints && <p class="loading">{t.loading}</p>}
      {endpoints && endpoints.length === 0 && <p>{t.noWebhooks}</p>}
      {endpoints && endpoints.length > 0 && (
        <ul class="webhooks">
          {endpoints.map((webhook) => (
            <li key={webhook.id} class="card webhook">
              <p class="url">
                <bdi dir="ltr">{visibleUrl(webhook.url)}</bdi>
              </p>
              <p>
                <span class={`status status-${webhook.status}`}>{webhook.status === 'enabled' ? t.enabled : t.disabled}</span>
                {webhook.disabledReason && <bdi> · {webhook.disabledReason}</bdi>}
              </p>
              <p class="hint">{webhook.events.map((type) => eventTypeText(t, type)).join(' · ')}</p>
              <div class="actions">
                <button type="button" onClick={() => void rotate(webhook)}>
                  {t.rotateSecret}
                </button>
                {webhook.status === 'disabled' && (
                  <button type="button" onClick={() => void enable(webhook)}>
                    {t.enable}
                  </button>
                )}
                <button
                  type="button"
                  aria-expanded={open === webhook.id ? 'true' : 'false'}
                  onClick={() => setOpen(open === webhook.id ? undefined : webhook.id)}
                >
                  {t.deliveries}
                </button>
                <button type="button" class="danger" onClick={() => setDeleting(webhook)}>
                  {t.delete}
                </button>
              </div>
              {open === webhook.id && <Deliveries webhookId={webhook.id} />}
            </li>
          ))}
        </ul>
      )}
      <ConfirmDialog
        open={deleting !== undefined}
        question={t.deleteQuestion(visibleUrl(deleting?.url ?? ''))}
        confirm={t.deleteWebhook}
        onConfirm={() => void remove()}
        onCancel={() => setDeleting(undefined)}
      />
    </section>
  )
}
