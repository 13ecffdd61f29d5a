import type { Messages } from './i18n'
import type { Issue } from './validate'

/** A client-side check's issue in the page's language, worded as the service words the same problem. */
export function issueMessage(t: Messages, issue: Issue): string {
  const limit = issue.limit
  switch (issue.keyword) {
    case 'required':
      return t.v_required
    case 'type':
      return t.v_type(String(limit))
    case 'minimum':
      return t.v_minimum(Number(limit))
    case 'maximum':
      return t.v_maximum(Number(limit))
    case 'minLength':
      return t.v_minLength(Number(limit))
    case 'maxLength':
      return t.v_maxLength(Number(limit))
    case 'minItems':
      return t.v_minItems(Number(limit))
    case 'maxItems':
      return t.v_maxItems(Number(limit))
    case 'enum':
      return t.v_enum((limit as unknown[]).join(', '))
    case 'multipleOf':
      return t.v_multipleOf(Number(limit))
    case 'pattern':
      return t.v_pattern
    case 'uniqueItems':
      return t.v_unique
    case 'format':
      return limit === 'http-url' ? t.v_format_url : limit === 'display-name' ? t.v_format_display : t.v_format_text
    default:
      return t.v_other
  }
}
