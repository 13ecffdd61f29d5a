import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { invalidRequest } from '../errors.js'
import { jsonResponse } from '../http/openapi.js'
import { UNSTORABLE } from '../http/schema-vocabulary.js'
import { defaultsFilled } from '../http/validation.js'
import { providerOf } from '../providers/authenticate.js'
import { eventOf, type EventFeed } from './feed.js'
import { EventsPage, EventsQuery, exampleEvent, type EventsParams } from './schemas.js'

export const eventRoutes: FastifyPluginAsyncTypebox<{ feed: EventFeed }> = async (app, { feed }) => {
  app.get(
    '/events',
    {
      schema: {
        operationId: 'listEvents',
        tags: ['events'],
        summary: 'Your events, oldest first',
        description:
          'Every change of your listings, in the order it was committed. Start without `after`, then pass each ' +
          'answer’s `nextCursor`: you get every event exactly once, in order, with nothing skipped, also while ' +
          'changes are being made on several instances. An empty `data` means nothing new yet: poll again with ' +
          'the same `after`.',
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
      const provider = providerOf(request)
      const { after, limit } = request.query
      // A value create would refuse as text cannot be an event id; PostgreSQL would refuse a NUL as an error.
      const rows = after !== undefined && UNSTORABLE.test(after) ? undefined : await feed.page(provider.id, after, limit)
      if (!rows) throw invalidRequest([{ parameter: 'after', detail: 'is not the id of one of your events (or it is no longer kept)' }])
      const data = rows.map((row) => eventOf(row, provider.industry))
      return { data, nextCursor: data.at(-1)?.id ?? null }
    },
  )
}
