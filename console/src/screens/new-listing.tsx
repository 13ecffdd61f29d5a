import { useEffect, useRef, useState } from 'preact/hooks'
import createListingSchema from 'schema:create-listing'
import { api, type CreateListingBody, type ListingView, type Problem } from '../api'
import type { Messages } from '../i18n'
import { issueMessage } from '../messages-of'
import { newReference, numberOf, rateOf, webNameOf, webNameTyped } from '../form-values'
import { PhotoField } from '../photo-field'
import { navigate } from '../router'
import { ErrorSummary, Field, fieldId, Heading, Select, useLocale } from '../ui'
import { validate, type Issue } from '../validate'

const MAX_ITEMS = 100
const CATEGORIES = ['product', 'service', 'tax'] as const
const SUB_CATEGORIES = ['main_dish', 'side_dish', 'drink', 'delivery', 'vat'] as const
const TYPES = ['timed', 'priority_timed'] as const

interface ItemDraft {
  key: number
  nameAr: string
  nameEn: string
  webName: string
  /** Once the web name is typed by hand, the English name stops deriving it. */
  webNameTyped: boolean
  category: string
  subCategory: string
  price: string
  quantity: string
  imageUrl: string
}

interface Draft {
  referenceId: string
  latitude: string
  longitude: string
  brandAr: string
  brandEn: string
  brandWebName: string
  brandWebNameTyped: boolean
  brandImageUrl: string
  discount: string
  type: string
  driver: boolean
  items: ItemDraft[]
}

let nextKey = 1
const newItem = (): ItemDraft => ({
  key: nextKey++,
  nameAr: '',
  nameEn: '',
  webName: '',
  webNameTyped: false,
  category: 'product',
  subCategory: 'main_dish',
  price: '',
  quantity: '1',
  imageUrl: '',
})

/** The create body the draft stands for; values that are not what the schema wants stay as typed, to be reported. */
function bodyOf(draft: Draft): Record<string, unknown> {
  const optional = (text: string) => (text.trim() === '' ? undefined : text)
  return {
    referenceId: draft.referenceId,
    location: { latitude: numberOf(draft.latitude), longitude: numberOf(draft.longitude) },
    brand: {
      displayName: { ar: draft.brandAr, en: draft.brandEn },
      urlSafeName: draft.brandWebName,
      imageUrl: draft.brandImageUrl.trim(),
    },
    listingDetails: { discountRate: rateOf(draft.discount), type: draft.type, isAssignedToDriver: draft.driver },
    items: draft.items.map((item) => ({
      displayName: { ar: item.nameAr, en: item.nameEn },
      urlSafeName: item.webName,
      imageUrl: optional(item.imageUrl)?.trim(),
      category: item.category,
      subCategory: item.subCategory,
      price: numberOf(item.price),
      quantity: numberOf(item.quantity),
    })),
  }
}

/** A client-side check's message, saying what to do where the schema's wording would not. */
function messageOf(t: Messages, issue: Issue, draft: Draft): string {
  if (issue.pointer === '/listingDetails/discountRate') return t.v_discount
  if (issue.pointer === '/brand/imageUrl' && draft.brandImageUrl.trim() === '') return t.v_image_missing
  if (issue.pointer.endsWith('/imageUrl') && issue.keyword === 'format') return t.v_image_address
  return issueMessage(t, issue)
}

/** The label a pointer's field has, for the error summary. */
function labelOf(t: Messages, pointer: string): string {
  const top: Record<string, string> = {
    '/referenceId': t.reference,
    '/location/latitude': t.latitude,
    '/location/longitude': t.longitude,
    '/brand/displayName/ar': t.brandNameAr,
    '/brand/displayName/en': t.brandNameEn,
    '/brand/urlSafeName': t.brandWebName,
    '/brand/imageUrl': t.brandImageUrl,
    '/listingDetails/discountRate': t.discount,
    '/listingDetails/type': t.type,
    '/listingDetails/isAssignedToDriver': t.deliveredByDriver,
    '/items': t.items,
  }
  const named = top[pointer]
  if (named) return named
  const item = /^\/items\/(\d+)\/(.+)$/.exec(pointer)
  if (item) {
    const fields: Record<string, string> = {
      'displayName/ar': t.nameAr,
      'displayName/en': t.nameEn,
      urlSafeName: t.webName,
      category: t.category,
      subCategory: t.subcategory,
      price: t.price,
      quantity: t.quantity,
      imageUrl: t.imageUrl,
    }
    return `${t.item(Number(item[1]) + 1)} · ${fields[item[2] as string] ?? item[2]}`
  }
  return pointer
}

/** Pointers the form has a field for (others are shown in the summary only). */
function hasField(pointer: string, items: number): boolean {
  const item = /^\/items\/(\d+)\//.exec(pointer)
  if (item) return Number(item[1]) < items && document.getElementById(fieldId(pointer)) !== null
  return document.getElementById(fieldId(pointer)) !== null
}

/**
 * What a new listing takes from the provider's latest one, where the seller has not typed anything yet: the brand
 * (names, web name, image) and the place rarely change between listings. A first listing starts from the
 * provider's own name, in the language it is written in.
 */
function prefilled(draft: Draft, latest: ListingView | undefined, providerName: string | undefined): Draft {
  const untouchedBrand = draft.brandAr === '' && draft.brandEn === '' && draft.brandWebName === ''
  if (!latest) {
    if (!untouchedBrand || providerName === undefined) return draft
    const arabic = /[\u0600-\u06FF]/.test(providerName)
    return arabic ? { ...draft, brandAr: providerName } : { ...draft, brandEn: providerName, brandWebName: webNameOf(providerName) }
  }
  const brand = latest.brand
  return {
    ...draft,
    ...(untouchedBrand && {
      brandAr: brand.nameAr,
      brandEn: brand.nameEn,
      brandWebName: brand.urlSafeName,
      // A web name of the seller's own choosing stays when the English name is changed.
      brandWebNameTyped: brand.urlSafeName !== webNameOf(brand.nameEn),
    }),
    brandImageUrl: draft.brandImageUrl || brand.imageUrl,
    latitude: draft.latitude || String(latest.location.latitude),
    longitude: draft.longitude || String(latest.location.longitude),
  }
}

type Errors = Record<string, string>

export function NewListing({ providerName }: { providerName?: string }) {
  const { t, language } = useLocale()
  const [draft, setDraft] = useState<Draft>(() => ({
    referenceId: newReference(),
    latitude: '',
    longitude: '',
    brandAr: '',
    brandEn: '',
    brandWebName: '',
    brandWebNameTyped: false,
    brandImageUrl: '',
    discount: '',
    type: 'timed',
    driver: true,
    items: [newItem()],
  }))
  const [errors, setErrors] = useState<Errors>({})
  const [summary, setSummary] = useState<{ title: string; pointers: string[]; other?: string } | undefined>()
  const [busy, setBusy] = useState(false)
  const [locationNote, setLocationNote] = useState(false)
  /** The photos being sent: the brand's and items' (by key). */
  const [sendingPhotos, setSendingPhotos] = useState<ReadonlySet<string>>(new Set())
  const focusItem = useRef<number | undefined>()

  useEffect(() => {
    let live = true
    void (async () => {
      const { data: page } = await api.GET('/api/v1/listing', { params: { query: { page: 1, limit: 1 } } })
      const latest = page?.content[0]
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the effect's cleanup clears `live` during the await.
      if (!page || !live) return
      const listing = latest && (await api.GET('/api/v1/listing/{listingId}', { params: { path: { listingId: latest.id } } })).data
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the effect's cleanup clears `live` during the await.
      if (!live || (latest && !listing)) return
      setDraft((d) => prefilled(d, listing, providerName))
    })()
    return () => {
      live = false
    }
  }, [])

  useEffect(() => {
    if (focusItem.current === undefined) return
    // A render already under way when "Add item" was pressed runs this before the new item exists: keep the request
    // for the render that adds it.
    const field = document.getElementById(fieldId(`/items/${focusItem.current}/displayName/ar`))
    if (!field) return
    field.focus()
    focusItem.current = undefined
  })

  const set = (change: Partial<Draft>) => setDraft((d) => ({ ...d, ...change }))
  const setItem = (key: number, change: Partial<ItemDraft>) =>
    setDraft((d) => ({ ...d, items: d.items.map((item) => (item.key === key ? { ...item, ...change } : item)) }))
  const photoBusy = (photo: string) => (sending: boolean) =>
    setSendingPhotos((now) => {
      if (now.has(photo) === sending) return now
      const next = new Set(now)
      if (sending) next.add(photo)
      else next.delete(photo)
      return next
    })

  const show = (found: Errors, other?: string) => {
    setErrors(found)
    setSummary({ title: other ? t.requestFailed : t.fixErrors(Object.keys(found).length), pointers: Object.keys(found), other })
  }

  const submit = async (event: Event) => {
    event.preventDefault()
    if (busy) return
    if (sendingPhotos.size > 0) {
      setSummary({ title: t.photoStillUploading, pointers: [] })
      return
    }
    const body = bodyOf(draft)
    const issues = validate(createListingSchema, body)
    if (issues.length > 0) {
      const found: Errors = {}
      for (const issue of issues) found[issue.pointer] = messageOf(t, issue, draft)
      show(found)
      return
    }
    setBusy(true)
    const { data, error } = await api.POST('/api/v1/listing/create', { body: body as CreateListingBody })
    setBusy(false)
    if (data) {
      navigate(`/console/listings/${encodeURIComponent(data.listingId)}`)
      return
    }
    const problem = error as Problem | undefined
    const found: Errors = {}
    for (const detail of problem?.errors ?? []) {
      if (detail.pointer !== undefined) found[detail.pointer] ??= detail.detail
    }
    // A referenceId used before with another body: the field that decides it is the reference.
    if (problem?.type === '/problems/conflict' && Object.keys(found).length === 0) found['/referenceId'] = problem.detail
    if (Object.keys(found).length > 0) show(found)
    else show({}, problem?.detail ?? t.v_other)
  }

  const err = (pointer: string) => errors[pointer]
  const typeLabel: Record<string, string> = { timed: t.type_timed, priority_timed: t.type_priority_timed }
  /** A name in the page's language, else in the other, else what stands for it. */
  const nameIn = (ar: string, en: string, otherwise: string) => (language === 'ar' ? ar || en : en || ar).trim() || otherwise

  return (
    <section>
      <Heading>{t.newListing}</Heading>
      {summary && (
        <ErrorSummary
          title={summary.title}
          entries={
            summary.other
              ? [{ label: '', message: summary.other }]
              : summary.pointers.map((pointer) => ({
                  name: hasField(pointer, draft.items.length) ? pointer : undefined,
                  label: labelOf(t, pointer),
                  message: errors[pointer] as string,
                }))
          }
        />
      )}
      <form noValidate onSubmit={(event) => void submit(event)} class="listing-form">
        <div class="card cols">
          <div>
            <div class="pair">
              <Field
                name="/brand/displayName/ar"
                label={t.brandNameAr}
                value={draft.brandAr}
                dir="rtl"
                error={err('/brand/displayName/ar')}
                onValue={(v) => set({ brandAr: v })}
              />
              <Field
                name="/brand/displayName/en"
                label={t.brandNameEn}
                value={draft.brandEn}
                dir="ltr"
                error={err('/brand/displayName/en')}
                onValue={(v) => set(draft.brandWebNameTyped ? { brandEn: v } : { brandEn: v, brandWebName: webNameOf(v) })}
              />
            </div>
            <Field
              name="/brand/urlSafeName"
              label={t.brandWebName}
              value={draft.brandWebName}
              error={err('/brand/urlSafeName')}
              onValue={(v) => set({ brandWebName: v, brandWebNameTyped: true })}
              onBlur={() => {
                // Emptied and left: it follows the English name again.
                if (draft.brandWebName === '') set({ brandWebName: webNameOf(draft.brandEn), brandWebNameTyped: false })
              }}
              variant="web-name"
              dir="ltr"
              hint={t.webNameHint}
              normalise={webNameTyped}
            />
          </div>
          <PhotoField
            pointer="/brand/imageUrl"
            photoLabel={t.brandPhoto}
            urlLabel={t.brandImageUrl}
            url={draft.brandImageUrl}
            onUrl={(v) => set({ brandImageUrl: v })}
            urlError={err('/brand/imageUrl')}
            alt={nameIn(draft.brandAr, draft.brandEn, t.brandPhoto)}
            onBusy={photoBusy('brand')}
          />
        </div>

        <div class="card cols">
          <div>
            <div class="pair offer">
              <Field
                name="/listingDetails/discountRate"
                label={t.discount}
                value={draft.discount}
                dir="ltr"
                inputMode="decimal"
                hint={t.discountHint}
                error={err('/listingDetails/discountRate')}
                onValue={(v) => set({ discount: v })}
              />
              <Select
                name="/listingDetails/type"
                label={t.type}
                value={draft.type}
                options={TYPES.map((value) => ({ value, label: typeLabel[value] as string }))}
                error={err('/listingDetails/type')}
                onValue={(v) => set({ type: v })}
              />
            </div>
            <div class="field checkbox">
              <input
                id={fieldId('/listingDetails/isAssignedToDriver')}
                name="/listingDetails/isAssignedToDriver"
                type="checkbox"
                checked={draft.driver}
                aria-describedby={`${fieldId('/listingDetails/isAssignedToDriver')}-hint`}
                onChange={(event) => set({ driver: event.currentTarget.checked })}
              />
              <label for={fieldId('/listingDetails/isAssignedToDriver')}>{t.deliveredByDriver}</label>
              <p class="hint" id={`${fieldId('/listingDetails/isAssignedToDriver')}-hint`}>
                {t.deliveredByDriverHint}
              </p>
            </div>
          </div>
          <div>
            <div class="pair secondary">
              <Field
                name="/location/latitude"
                label={t.latitude}
                value={draft.latitude}
                dir="ltr"
                inputMode="decimal"
                error={err('/location/latitude')}
                onValue={(v) => set({ latitude: v })}
              />
              <Field
                name="/location/longitude"
                label={t.longitude}
                value={draft.longitude}
                dir="ltr"
                inputMode="decimal"
                error={err('/location/longitude')}
                onValue={(v) => set({ longitude: v })}
              />
            </div>
            <div class="field">
              <button
                type="button"
                onClick={() => {
                  setLocationNote(false)
                  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- absent in some browsers and settings.
                  if (!navigator.geolocation) {
                    setLocationNote(true)
                    return
                  }
                  navigator.geolocation.getCurrentPosition(
                    (position) => set({ latitude: String(position.coords.latitude), longitude: String(position.coords.longitude) }),
                    () => setLocationNote(true),
                  )
                }}
              >
                {t.useMyLocation}
              </button>
              {locationNote && (
                <p class="hint" role="status">
                  {t.locationUnavailable}
                </p>
              )}
            </div>
            <div class="compact reference">
              <Field
                name="/referenceId"
                label={t.reference}
                value={draft.referenceId}
                dir="ltr"
                error={err('/referenceId')}
                onValue={(v) => set({ referenceId: v })}
              />
            </div>
          </div>
        </div>

        {draft.items.map((item, index) => {
          const at = (field: string) => `/items/${index}/${field}`
          const setThis = (change: Partial<ItemDraft>) => setItem(item.key, change)
          return (
            <fieldset class="card item" key={item.key}>
              <legend>{t.item(index + 1)}</legend>
              <button
                type="button"
                class="remove-item"
                disabled={draft.items.length === 1}
                onClick={() => {
                  setErrors({})
                  setSummary(undefined)
                  setDraft((d) => ({ ...d, items: d.items.filter((other) => other.key !== item.key) }))
                  document.getElementById('add-item')?.focus()
                }}
              >
                {t.removeItem(index + 1)}
              </button>
              <div class="cols">
                <div>
                  <div class="pair">
                    <Field
                      name={at('displayName/ar')}
                      label={t.nameAr}
                      value={item.nameAr}
                      dir="rtl"
                      error={err(at('displayName/ar'))}
                      onValue={(v) => setThis({ nameAr: v })}
                    />
                    <Field
                      name={at('displayName/en')}
                      label={t.nameEn}
                      value={item.nameEn}
                      dir="ltr"
                      error={err(at('displayName/en'))}
                      onValue={(v) => setThis(item.webNameTyped ? { nameEn: v } : { nameEn: v, webName: webNameOf(v) })}
                    />
                  </div>
                  <Field
                    name={at('urlSafeName')}
                    label={t.webName}
                    value={item.webName}
                    error={err(at('urlSafeName'))}
                    onValue={(v) => setThis({ webName: v, webNameTyped: true })}
                    onBlur={() => {
                      if (item.webName === '') setThis({ webName: webNameOf(item.nameEn), webNameTyped: false })
                    }}
                    variant="web-name"
                    dir="ltr"
                    hint={t.webNameHint}
                    normalise={webNameTyped}
                  />
                </div>
                <div>
                  <div class="pair">
                    <Field
                      name={at('price')}
                      label={t.price}
                      value={item.price}
                      dir="ltr"
                      inputMode="decimal"
                      error={err(at('price'))}
                      onValue={(v) => setThis({ price: v })}
                    />
                    <Field
                      name={at('quantity')}
                      label={t.quantity}
                      value={item.quantity}
                      dir="ltr"
                      inputMode="numeric"
                      error={err(at('quantity'))}
                      onValue={(v) => setThis({ quantity: v })}
                    />
                  </div>
                  <div class="pair">
                    <Select
                      name={at('category')}
                      label={t.category}
                      value={item.category}
                      options={CATEGORIES.map((value) => ({ value, label: t[`category_${value}`] }))}
                      error={err(at('category'))}
                      onValue={(v) => setThis({ category: v })}
                    />
                    <Select
                      name={at('subCategory')}
                      label={t.subcategory}
                      value={item.subCategory}
                      options={SUB_CATEGORIES.map((value) => ({ value, label: t[`subCategory_${value}`] }))}
                      error={err(at('subCategory'))}
                      onValue={(v) => setThis({ subCategory: v })}
                    />
                  </div>
                </div>
              </div>
              <PhotoField
                pointer={at('imageUrl')}
                photoLabel={t.itemPhoto}
                urlLabel={`${t.imageUrl} ${t.optional}`}
                url={item.imageUrl}
                onUrl={(v) => setThis({ imageUrl: v })}
                urlError={err(at('imageUrl'))}
                alt={nameIn(item.nameAr, item.nameEn, t.item(index + 1))}
                onBusy={photoBusy(`item-${item.key}`)}
              />
            </fieldset>
          )
        })}

        <div class="actions">
          <button
            type="button"
            id="add-item"
            disabled={draft.items.length >= MAX_ITEMS}
            onClick={() => {
              focusItem.current = draft.items.length
              setDraft((d) => ({ ...d, items: [...d.items, newItem()] }))
            }}
          >
            {t.addItem}
          </button>
          <button type="submit" class="primary" disabled={busy} aria-busy={busy ? 'true' : undefined}>
            {t.publish}
          </button>
        </div>
      </form>
    </section>
  )
}
