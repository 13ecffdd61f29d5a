import type { Manifest } from './assets.js'

export type Language = 'en' | 'ar'

/**
 * The first visit's language, from Accept-Language (RFC 9110 §12.5.4): the preferred of Arabic and English by
 * q-value, English when neither is named. Later visits use what the language control remembered.
 */
export function preferredLanguage(acceptLanguage: string | undefined): Language {
  let best: { language: Language; q: number } | undefined
  for (const part of (acceptLanguage ?? '').split(',')) {
    const [range = '', ...params] = part.trim().toLowerCase().split(';')
    const language = range.split('-')[0]
    if (language !== 'ar' && language !== 'en') continue
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    const q = qParam === undefined ? 1 : Number(qParam.slice(2))
    if (Number.isFinite(q) && q > 0 && (!best || q > best.q)) best = { language, q }
  }
  return best?.language ?? 'en'
}

const TITLES: Record<Language, string> = { en: 'Provider console', ar: 'لوحة المزوّد' }

/**
 * The one HTML page: no inline script or style (the CSP forbids both), only the fingerprinted entry files. The
 * script renders everything; before it runs, the page is empty but titled.
 */
export function consolePage(manifest: Manifest | undefined, language: Language): string {
  const dir = language === 'ar' ? 'rtl' : 'ltr'
  const head = manifest
    ? `<link rel="stylesheet" href="/console/assets/${manifest.style}">` + `<script type="module" src="/console/assets/${manifest.script}"></script>`
    : ''
  const body = manifest ? '' : '<p>The console is not built: run <code>npm run build</code>.</p>'
  return (
    `<!doctype html><html lang="${language}" dir="${dir}"><head><meta charset="utf-8">` +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${TITLES[language]}</title><link rel="icon" href="data:,">${head}</head>` +
    `<body><div id="app">${body}</div></body></html>`
  )
}
