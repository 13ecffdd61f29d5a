// The service's request schemas, put in the bundle by console/build.ts from src/ (see validate.ts).
declare module 'schema:*' {
  import type { Schema } from './validate'
  const schema: Schema
  export default schema
}
