import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { invalidRequest } from '../errors.js'
import { jsonResponse } from '../http/openapi.js'
import { UNSTORABLE } from '../http/schema-vocabulary.js'
import { defaultsFilled } from '../http/validation.js'
import { principalOf } from '../providers/authenticate.js'
import { eventOf, type EventFeed } from './feed.js'
import { ownerOf } from './owner.js'
import { EventsPage, EventsQuery, exampleEvent, type EventsParams } from './schemas.js'

export const eventRoutes: FastifyPluginAsyncTypebox<{ feed: EventFeed }> = async (app, { feed }) => {
  app.get(
    '/events',
    {
      config: { principal: 'any' },
      // Events are made field by field (eventOf): the schema's serializer would only check each against the union
      // of event kinds to pick its branch, which costs more than writing the page.
      serializerCompiler: () => (page) => JSON.stringify(page),
      schema: {
        operationId: 'listEvents',
        tags: ['events'],
        summary: 'Your events, oldest first',
        description:
          'Your stream, in the order it was committed: for a provider, every change of its listings and of the ' +
          'reservations on them; for a marketplace, every change of its reservations. Start without `after`, then ' +
          'pass each answer’s `nextCursor`: you get every event exactly once, in order, with nothing skipped, also ' +
          'while changes are being made on several instances. An empty `data` means nothing new yet: poll again ' +
          'with the same `after`. Provider and marketplace tokens.',
        querystring: defaultsFilled<EventsParams>(EventsQuery),
        response: {
          200: jsonResponse('The next events.', EventsPage, {
            events: { data: [exampleEvent], nextCursor: exampleEvent.id },
            nothingNew: { data: [], nextCursor: null },
          }),
        },
        'x-problems': ['invalid-request', 'internal', 'unavailable'],
      },
    },
    async (request) => {
      const principal = principalOf(request)
      const { after, limit } = request.query
      // A value create would refuse as text cannot be an event id; PostgreSQL would refuse a NUL as an error.
      const rows = after !== undefined && UNSTORABLE.test(after) ? undefined : await feed.page(ownerOf(principal), after, limit)
      if (!rows) throw invalidRequest([{ parameter: 'after', detail: 'is not the id of one of your events (or it is no longer kept)' }])
      const industry = principal.kind === 'provider' ? principal.provider.industry : null
      const data = rows.map((row) => eventOf(row, industry))
      return { data, nextCursor: data.at(-1)?.id ?? null }
    },
  )
}
