// The service's request schemas, put in the bundle by console/build.ts from src/ (see validate.ts).
declare module 'schema:*' {
  const schema: import('./validate').Schema
  export default schema
}
