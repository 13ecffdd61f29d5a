/**
 * Aborts after `ms`, or when `also` does; dispose() once the work is over. Not AbortSignal.timeout inside
 * AbortSignal.any: on Node 20 the combined signal may let the timer's signal be collected before it fires.
 */
export function abortAfter(ms: number, also?: AbortSignal): { signal: AbortSignal; timedOut(): boolean; dispose(): void } {
  const controller = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort()
  }, ms)
  const onAbort = () => controller.abort()
  if (also?.aborted) controller.abort()
  else also?.addEventListener('abort', onAbort, { once: true })
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    dispose() {
      clearTimeout(timer)
      also?.removeEventListener('abort', onAbort)
    },
  }
}
