import { useEffect, useState } from 'preact/hooks'

/** Paths under /console, in the address bar (the service serves the page for each), moved with history. */
const listeners = new Set<() => void>()

export function navigate(path: string, replace = false): void {
  if (replace) history.replaceState(null, '', path)
  else history.pushState(null, '', path)
  for (const listener of listeners) listener()
}

addEventListener('popstate', () => {
  for (const listener of listeners) listener()
})

export interface Route {
  path: string
  query: URLSearchParams
}

const current = (): Route => ({ path: location.pathname.replace(/\/+$/, ''), query: new URLSearchParams(location.search) })

export function useRoute(): Route {
  const [route, setRoute] = useState(current)
  useEffect(() => {
    const update = () => setRoute(current())
    listeners.add(update)
    return () => void listeners.delete(update)
  }, [])
  return route
}

/** A click on an in-console link moves without reloading the page (modified clicks keep their meaning). */
export function followLink(event: MouseEvent): void {
  const anchor = event.currentTarget as HTMLAnchorElement
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
  event.preventDefault()
  navigate(anchor.getAttribute('href') ?? '/console')
}
